import type { ChangeOrigin, RepoChange, RepoTree } from "@berth/core";
import { buildCommitMessage } from "./commit-message.js";
import { GitOpsError } from "./errors.js";
import { BatchOverlay, type GitTree, TxnView } from "./git-tree.js";
import { assertWritablePath, parents } from "./paths.js";

/**
 * Group commit, the pure part: run each queued transaction's `mutate` in order on the batch's base commit
 * plus the changes of the transactions before it, and turn the results into one commit each.
 */

export type Mutate = (tree: RepoTree) => Promise<RepoChange | null>;

export interface QueuedTxn {
  mutate: Mutate;
  origin: ChangeOrigin;
}

export type PlannedTxn =
  | { kind: "commit"; files: Map<string, string | null>; message: string; view: TxnView }
  | { kind: "noop"; view: TxnView }
  | { kind: "error"; error: unknown; view: TxnView };

export interface Plan {
  /** The remote head the plan builds on; undefined for a branch that does not exist yet. */
  base: string | undefined;
  txns: PlannedTxn[];
}

export function commitCount(plan: Plan): number {
  return plan.txns.filter((t) => t.kind === "commit").length;
}

function isRepoChange(value: unknown): value is RepoChange {
  const v = value as RepoChange | null;
  return typeof v === "object" && v !== null && v.files instanceof Map && typeof v.subject === "string";
}

/** The part of `change` that really changes `view`, after checking every path. Throws GitOpsError. */
export async function effectiveChanges(view: TxnView, change: RepoChange): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  // Checks see the change's own earlier entries too (`a` then `a/b` in one change is a clash). The folders
  // of the files written so far are kept in a set: a change of 26,000 files must not compare every pair.
  const writtenDirs = new Map<string, number>();
  const isFile = async (p: string) => (out.has(p) ? out.get(p) !== null : view.isFile(p));
  const hasFileUnder = (p: string) => (writtenDirs.get(p) ?? 0) > 0;
  const track = (p: string, delta: 1 | -1) => {
    for (const d of parents(p)) writtenDirs.set(d, (writtenDirs.get(d) ?? 0) + delta);
  };
  for (const [path, content] of change.files) {
    assertWritablePath(path);
    if (content !== null && typeof content !== "string") {
      throw new GitOpsError("invalid-change", `content of ${path} must be a string or null`);
    }
    if (content === null) {
      if (await isFile(path)) {
        if (typeof out.get(path) === "string") track(path, -1);
        out.set(path, null);
      } else if (out.has(path)) continue; // already deleted by this change
      else if (await view.isDir(path)) throw new GitOpsError("invalid-change", `cannot delete ${path}: it is a folder`);
      continue;
    }
    for (const parent of parents(path)) {
      if (await isFile(parent)) throw new GitOpsError("invalid-change", `cannot write ${path}: ${parent} is a file`);
    }
    if (hasFileUnder(path) || (await view.isDir(path))) {
      throw new GitOpsError("invalid-change", `cannot write ${path}: it is a folder`);
    }
    if (typeof out.get(path) !== "string") track(path, 1);
    out.set(path, content);
  }
  // Keep only what differs from the view: rewriting a file with its content is no change (compared by blob
  // id through the tree index: nothing is read).
  for (const [path, content] of [...out]) {
    const unchanged = content === null ? !(await view.isFile(path)) : await view.hasContent(path, content);
    if (unchanged) out.delete(path);
  }
  return out;
}

/** Runs every transaction's mutate on `base`; never throws for a transaction's own failure. */
export async function planBatch(txns: readonly QueuedTxn[], base: GitTree): Promise<Plan> {
  const overlay = new BatchOverlay();
  const planned: PlannedTxn[] = [];
  for (const [position, txn] of txns.entries()) {
    const view = new TxnView(base, overlay.at(position));
    try {
      const change = await txn.mutate(view);
      if (change === null || change === undefined) {
        planned.push({ kind: "noop", view });
        continue;
      }
      if (!isRepoChange(change)) throw new GitOpsError("invalid-change", "mutate must resolve with a RepoChange (files: Map, subject) or null");
      const files = await effectiveChanges(view, change);
      if (files.size === 0) {
        planned.push({ kind: "noop", view });
        continue;
      }
      const message = buildCommitMessage(change, txn.origin);
      overlay.add(position, files);
      planned.push({ kind: "commit", files, message, view });
    } catch (error) {
      planned.push({ kind: "error", error, view });
    }
  }
  return { base: base.revision, txns: planned };
}

/**
 * Whether any transaction's outcome could differ on a tree where `changed` paths differ from the plan's
 * base: true when a changed path overlaps something a transaction read, listed or wrote, or when a
 * transaction asked the history (new commits are new history).
 */
export function planConflicts(plan: Plan, changed: readonly string[]): boolean {
  if (changed.length === 0) return false;
  const changedSet = new Set(changed);
  // Every folder holding a changed path: a listed folder conflicts when it is one of these.
  const changedDirs = new Set<string>([""]);
  for (const p of changed) for (const d of parents(p)) changedDirs.add(d);
  const hit = (path: string): boolean => {
    if (changedSet.has(path) || changedDirs.has(path)) return true; // same path, or a folder holding a changed path
    return parents(path).some((d) => changedSet.has(d)); // a changed path is a parent of it (file/folder clash)
  };
  for (const t of plan.txns) {
    if (t.view.readsHistory) return true;
    for (const d of t.view.lists) if (changedDirs.has(d) || hit(d)) return true;
    for (const r of t.view.reads) if (hit(r)) return true;
    if (t.kind === "commit") for (const p of t.files.keys()) if (hit(p)) return true;
  }
  return false;
}

function data(buf: Buffer | string): string[] {
  const b = typeof buf === "string" ? Buffer.from(buf, "utf8") : buf;
  return [`data ${b.length}\n`, b.toString("utf8"), "\n"];
}

/**
 * A git fast-import stream that writes the plan's commits, in order, on `ref`, the first one on top of the
 * plan's base. Request data only appears inside length-prefixed `data` blocks; paths were checked by
 * assertWritablePath (no quoting needed: no spaces, quotes or line breaks).
 */
export function fastImportStream(plan: Plan, ref: string, author: { name: string; email: string }, when: Date): { stream: Buffer; marks: number[] } {
  const parts: string[] = [];
  const marks: number[] = [];
  const ident = `${author.name} <${author.email}> ${Math.floor(when.getTime() / 1000)} +0000`;
  parts.push(`reset ${ref}\n`);
  if (plan.base) parts.push(`from ${plan.base}\n`);
  parts.push("\n");
  let mark = 0;
  for (const t of plan.txns) {
    if (t.kind !== "commit") continue;
    mark += 1;
    marks.push(mark);
    parts.push(`commit ${ref}\n`, `mark :${mark}\n`, `author ${ident}\n`, `committer ${ident}\n`, ...data(t.message));
    for (const [path, content] of t.files) {
      if (content === null) parts.push(`D ${path}\n`);
      else parts.push(`M 100644 inline ${path}\n`, ...data(content));
    }
    parts.push("\n");
  }
  parts.push("done\n");
  return { stream: Buffer.from(parts.join(""), "utf8"), marks };
}
