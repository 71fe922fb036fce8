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

export type CommitTxn = { kind: "commit"; files: Map<string, string | null>; message: string; view: TxnView };
export type PlannedTxn = CommitTxn | { kind: "noop"; view: TxnView } | { kind: "error"; error: unknown; view: TxnView };

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
  // Folders already found not to be files: a team's 22 files share a handful. A later write of a file at
  // one of them is refused by the folder check below, so the answer cannot go stale within the change.
  const openDirs = new Set<string>();
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
      } else if (out.has(path))
        continue; // already deleted by this change
      else if (await view.isDir(path)) throw new GitOpsError("invalid-change", `cannot delete ${path}: it is a folder`);
      continue;
    }
    for (const parent of parents(path)) {
      if (openDirs.has(parent)) continue;
      if (await isFile(parent)) throw new GitOpsError("invalid-change", `cannot write ${path}: ${parent} is a file`);
      openDirs.add(parent);
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

/**
 * Plans a batch one transaction at a time on `base`, so transactions that arrive while the batch is being
 * planned can still join it: each sees the base plus the changes of every transaction planned before it.
 */
export class BatchPlanner {
  private readonly overlay = new BatchOverlay();
  private readonly planned: PlannedTxn[] = [];

  /** `onCommit` sees each commit as soon as it is planned, in order (to stream it to git meanwhile). */
  constructor(
    private readonly base: GitTree,
    private readonly onCommit?: (txn: CommitTxn) => void,
  ) {}

  /** Runs each transaction's mutate after those already planned; never throws for a transaction's own failure. */
  async add(txns: readonly QueuedTxn[]): Promise<void> {
    for (const txn of txns) {
      const planned = await this.planOne(txn, this.planned.length);
      this.planned.push(planned);
      if (planned.kind === "commit") this.onCommit?.(planned);
    }
  }

  plan(): Plan {
    return { base: this.base.revision, txns: [...this.planned] };
  }

  private async planOne(txn: QueuedTxn, position: number): Promise<PlannedTxn> {
    const view = new TxnView(this.base, this.overlay.at(position));
    try {
      const change = await txn.mutate(view);
      if (change === null || change === undefined) return { kind: "noop", view };
      if (!isRepoChange(change))
        throw new GitOpsError("invalid-change", "mutate must resolve with a RepoChange (files: Map, subject) or null");
      const files = await effectiveChanges(view, change);
      if (files.size === 0) return { kind: "noop", view };
      const message = buildCommitMessage(change, txn.origin);
      this.overlay.add(position, files);
      return { kind: "commit", files, message, view };
    } catch (error) {
      return { kind: "error", error, view };
    }
  }
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

/**
 * A git fast-import stream, one piece at a time: the start (the plan's base), then each commit, in order,
 * then the end. Request data only appears inside length-prefixed `data` blocks; paths were checked by
 * assertWritablePath (no quoting needed: no spaces, quotes or line breaks). Each text is encoded once,
 * straight into Buffers: joining a 100-commit batch's 10 MB into one string first copied it twice more.
 */
export class FastImportEncoder {
  private marks = 0;
  private readonly ident: string;

  constructor(
    private readonly ref: string,
    author: { name: string; email: string },
    when: Date,
  ) {
    this.ident = `${author.name} <${author.email}> ${Math.floor(when.getTime() / 1000)} +0000`;
  }

  /** The first commit goes on top of `base` (none: a new branch). */
  start(base: string | undefined): Buffer {
    return Buffer.from(`reset ${this.ref}\n${base ? `from ${base}\n` : ""}\n`, "utf8");
  }

  /** One commit on top of the previous one, in pieces; `mark` names it in the exported marks. */
  commit(message: string, files: ReadonlyMap<string, string | null>): { chunks: Buffer[]; mark: number } {
    const chunks: Buffer[] = [];
    const data = (head: string, content: string) => {
      const bytes = Buffer.from(content, "utf8");
      chunks.push(Buffer.from(`${head}data ${bytes.length}\n`, "utf8"), bytes, NEWLINE);
    };
    const mark = ++this.marks;
    data(`commit ${this.ref}\nmark :${mark}\nauthor ${this.ident}\ncommitter ${this.ident}\n`, message);
    for (const [path, content] of files) {
      if (content === null) chunks.push(Buffer.from(`D ${path}\n`, "utf8"));
      else data(`M 100644 inline ${path}\n`, content);
    }
    chunks.push(NEWLINE);
    return { chunks, mark };
  }

  /**
   * A commit whose parents are `parents` and whose tree holds only `folders` (path → an existing tree's id), whatever
   * its first parent holds: a following branch's commit (ADR 0036).
   */
  folders(
    message: string,
    parents: readonly [string, ...string[]],
    folders: ReadonlyMap<string, string>,
  ): { chunks: Buffer[]; mark: number } {
    const mark = ++this.marks;
    const bytes = Buffer.from(message, "utf8");
    const head = `commit ${this.ref}\nmark :${mark}\nauthor ${this.ident}\ncommitter ${this.ident}\ndata ${bytes.length}\n`;
    const [first, ...more] = parents;
    const lineage = `from ${first}\n${more.map((p) => `merge ${p}\n`).join("")}`;
    const entries = [...folders].map(([path, tree]) => `M 040000 ${tree} ${path}\n`).join("");
    const chunks = [Buffer.from(head, "utf8"), bytes, Buffer.from(`\n${lineage}deleteall\n${entries}\n`, "utf8")];
    return { chunks, mark };
  }

  end(): Buffer {
    return Buffer.from("done\n", "utf8");
  }
}

const NEWLINE = Buffer.from("\n");
