import {
  describeClusterStatus,
  describeReview,
  PHASE_LABELS,
  phaseOf,
  statusChain,
  type ChainStep,
  type ClusterStatus,
  type Phase,
  type PullRequestRef,
  type StatusResponse,
} from "@berth/api-contract";
import type { Paint } from "./io.js";
import { visibleWidth } from "./output/table.js";
import { plural, shortSha } from "./output/text.js";

/**
 * `berth status --watch`, the pure part: what is known about each cluster over time, the frame a terminal
 * shows, and the lines a CI log gets (one per change). commands/status.ts polls and draws.
 */

export const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** `closed`: the team's onboarding was closed without merge in review (pull-request mode): nothing will be Ready. */
export type Outcome = "ready" | "failed" | "unobservable" | "closed" | "watching";

interface Track {
  status: ClusterStatus;
  phase: Phase;
  /** When the cluster reached Ready or Failed (its clock stops), ms since the watch began. */
  settledAt?: number | undefined;
  /** The last line printed for it (non-TTY), to print only changes. */
  lastLine?: string | undefined;
}

export function formatElapsed(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

export const PHASE_STYLES: Record<Phase, Parameters<Paint>[0]> = {
  ready: "green",
  progressing: "blue",
  failed: "red",
  waiting: "yellow",
  unreachable: "magenta",
  unobserved: "gray",
};

export class WatchState {
  readonly clusters = new Map<string, Track>();
  team = "";
  revision: string | null = null;
  /** The last poll's error (the API unreachable for a moment): shown, and the watch goes on. */
  pollError: string | undefined;
  /** Pull-request mode: the team's last pull request, as the last answer gave it. */
  review: PullRequestRef | undefined;
  private lastReviewLine: string | undefined;

  /** Takes a status answer at `elapsedMs`; returns the log lines for what changed. */
  update(response: StatusResponse, elapsedMs: number): string[] {
    this.team = response.team;
    this.revision = response.revision;
    this.pollError = undefined;
    const lines: string[] = [];
    this.review = response.review;
    const reviewLine = this.reviewLine();
    if (reviewLine !== this.lastReviewLine) {
      if (reviewLine) lines.push(`[${formatElapsed(elapsedMs)}] review: ${reviewLine}`);
      this.lastReviewLine = reviewLine;
    }
    for (const status of response.clusters) {
      const phase = phaseOf(status);
      const track: Track = this.clusters.get(status.cluster) ?? { status, phase };
      const settled = phase === "ready" || phase === "failed";
      track.settledAt = settled
        ? track.settledAt !== undefined && track.phase === phase
          ? track.settledAt
          : elapsedMs
        : undefined;
      track.status = status;
      track.phase = phase;
      const line = `${PHASE_LABELS[phase]}: ${describeClusterStatus(status)}`;
      if (line !== track.lastLine) {
        lines.push(`[${formatElapsed(elapsedMs)}] ${status.cluster}: ${line}`);
        track.lastLine = line;
      }
      this.clusters.set(status.cluster, track);
    }
    return lines;
  }

  /** Clusters the API can see: a cluster it has no access to can never be confirmed, so it does not count. */
  observable(): Track[] {
    return [...this.clusters.values()].filter((t) => t.phase !== "unobserved");
  }

  /** Where review stands, with the pull request's link; undefined when there is none (direct mode). */
  reviewLine(): string | undefined {
    // A team in the Flux repo lands on at least one cluster (every environment has one): no cluster, not applied.
    return this.review && `${describeReview(this.review, this.clusters.size > 0)} (${this.review.url})`;
  }

  outcome(): Outcome {
    if (this.clusters.size === 0) return this.review?.state === "closed" ? "closed" : "watching";
    const observable = this.observable();
    if (observable.length === 0) return "unobservable";
    if (observable.some((t) => t.phase === "failed")) return "failed";
    if (observable.every((t) => t.phase === "ready")) return "ready";
    return "watching";
  }

  failures(): Array<{ cluster: string; reason: string }> {
    return this.observable()
      .filter((t) => t.phase === "failed")
      .map((t) => ({ cluster: t.status.cluster, reason: describeClusterStatus(t.status) }));
  }

  notReady(): Array<{ cluster: string; reason: string }> {
    return this.observable()
      .filter((t) => t.phase !== "ready")
      .map((t) => ({ cluster: t.status.cluster, reason: describeClusterStatus(t.status) }));
  }

  unobserved(): string[] {
    return [...this.clusters.values()].filter((t) => t.phase === "unobserved").map((t) => t.status.cluster);
  }
}

function stepSymbol(step: ChainStep, spinner: string, paint: Paint): string {
  switch (step.state) {
    case "done":
      return paint("green", "✔");
    case "failed":
      return paint("red", "✖");
    case "active":
      return paint("cyan", spinner);
    case "waiting":
      return paint("gray", "·");
  }
}

/** The chain on one line, as wide as fits: full labels, else short ones, else "n/8 · current step". */
function chainLine(chain: ChainStep[], spinner: string, paint: Paint, width: number): string {
  const join = (labels: (s: ChainStep) => string) =>
    chain
      .map((s) => `${stepSymbol(s, spinner, paint)} ${s.state === "waiting" ? paint("gray", labels(s)) : labels(s)}`)
      .join(paint("gray", " › "));
  const full = join((s) => s.label);
  if (visibleWidth(full) <= width) return full;
  const compact = join((s) => s.short);
  if (visibleWidth(compact) <= width) return compact;
  const done = chain.filter((s) => s.state === "done").length;
  const current = chain.find((s) => s.state !== "done");
  return `${done}/${chain.length} steps${current ? ` · ${stepSymbol(current, spinner, paint)} ${current.label}` : ""}`;
}

function truncate(text: string, width: number): string {
  return [...text].length <= width ? text : `${[...text].slice(0, Math.max(1, width - 1)).join("")}…`;
}

/** The terminal frame: a header, then per cluster its state and clock, its chain, and why it is not Ready. */
export function renderFrame(
  state: WatchState,
  options: { elapsedMs: number; tick: number; width: number; paint: Paint; live: boolean },
): string {
  const { paint, width } = options;
  const spinner = options.live ? (SPINNER[options.tick % SPINNER.length] ?? "…") : "…"; // (a tick is a count: always an index)
  const count = state.clusters.size;
  const lines = [
    `Team ${paint("bold", state.team)} · commit ${shortSha(state.revision)} · ${plural(count, "cluster")}${options.live ? " · Ctrl-C stops watching (the rollout goes on)" : ""}`,
    "",
  ];
  const review = state.reviewLine();
  if (review) {
    const symbol =
      state.review?.state === "closed" || state.review?.state === "changes-requested"
        ? paint("red", "✖")
        : state.review?.state === "merged"
          ? paint("green", "✔")
          : paint("cyan", spinner);
    lines.push(`${symbol} ${truncate(review, width - 2)}`, "");
  }
  for (const track of state.clusters.values()) {
    const { status, phase } = track;
    const symbol =
      phase === "ready"
        ? paint("green", "✔")
        : phase === "failed"
          ? paint("red", "✖")
          : phase === "unobserved"
            ? paint("gray", "–")
            : paint("cyan", spinner);
    const clock = formatElapsed(track.settledAt ?? options.elapsedMs);
    lines.push(
      `${symbol} ${paint("bold", status.cluster)} (${status.environment})  ${paint(PHASE_STYLES[phase], PHASE_LABELS[phase])}  ${paint("gray", clock)}`,
    );
    if (phase !== "unobserved") lines.push(`   ${chainLine(statusChain(status), spinner, paint, width - 3)}`);
    if (phase !== "ready") {
      const reason = truncate(describeClusterStatus(status), width - 3);
      lines.push(`   ${phase === "failed" ? paint("red", reason) : paint("gray", reason)}`);
    }
  }
  if (state.pollError)
    lines.push("", paint("yellow", truncate(`cannot read status right now (${state.pollError}); retrying`, width)));
  return lines.join("\n");
}
