import type { Paint } from "../io.js";

/** A unified diff with git's colours: headers bold, hunks cyan, additions green, removals red. */
export function colorDiff(diff: string, paint: Paint): string {
  return diff
    .split("\n")
    .map((line) => {
      if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("====") || line.startsWith("Index:"))
        return paint("bold", line);
      if (line.startsWith("@@")) return paint("cyan", line);
      if (line.startsWith("+")) return paint("green", line);
      if (line.startsWith("-")) return paint("red", line);
      return line;
    })
    .join("\n");
}
