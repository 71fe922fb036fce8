import { RepoContentError } from "../errors.js";
import { repoLayout } from "../layout.js";
import type { Platform } from "../platform.js";
import type { RepoTree } from "../repo.js";
import { parseRollout, ROLLOUT_ID, type Rollout } from "./model.js";

/** Reads rollout files from a tree; parses each distinct text once (they are re-read on every engine tick). */
export class RolloutReader {
  private readonly parsed = new Map<string, Rollout>();
  private readonly layout;

  constructor(platform: Platform) {
    this.layout = repoLayout(platform);
  }

  path(id: string): string {
    return this.layout.rolloutFile(id);
  }

  async read(tree: RepoTree, id: string): Promise<Rollout | undefined> {
    if (!ROLLOUT_ID.test(id)) return undefined;
    const path = this.layout.rolloutFile(id);
    const text = await tree.read(path);
    return text === undefined ? undefined : this.parse(text, path, id);
  }

  /** Every rollout in the tree, oldest first (ids sort by creation time). */
  async list(tree: RepoTree): Promise<Rollout[]> {
    const prefix = `${this.layout.rolloutsDir}/`;
    const ids = (await tree.list(this.layout.rolloutsDir))
      .map((p) => p.slice(prefix.length))
      .filter((f) => f.endsWith(".yaml"))
      .map((f) => f.slice(0, -".yaml".length))
      .filter((id) => ROLLOUT_ID.test(id))
      .sort();
    const out = await Promise.all(ids.map((id) => this.read(tree, id)));
    return out.filter((r): r is Rollout => r !== undefined);
  }

  private parse(text: string, path: string, id: string): Rollout {
    let r = this.parsed.get(text);
    if (!r) {
      r = parseRollout(text, path);
      if (this.parsed.size > 2_000) this.parsed.clear();
      this.parsed.set(text, r);
    }
    if (r.metadata.name !== id)
      throw new RepoContentError(path, `metadata.name is "${r.metadata.name}", expected "${id}"`);
    return r;
  }
}
