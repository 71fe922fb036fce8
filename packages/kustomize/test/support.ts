import { fileURLToPath } from "node:url";
import { filesOf } from "../../../tests/support/folder.js";
import type { SourceTree } from "../src/build.js";

export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** Every file below `dir`, and then `extra`, as the tree a build reads (paths relative to `dir`). */
export function treeFromFolder(dir: string, extra: ReadonlyMap<string, string> = new Map()): SourceTree {
  const files = new Map([...filesOf(dir), ...extra]);
  const paths = [...files.keys()].sort();
  return {
    read: async (path) => files.get(path),
    list: async (folder) => {
      const trimmed = folder.replace(/\/+$/, "");
      const prefix = trimmed === "" || trimmed === "." ? "" : `${trimmed}/`;
      return paths.filter((p) => p.startsWith(prefix));
    },
  };
}
