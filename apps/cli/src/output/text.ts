/** Small wording helpers shared by the commands' one-line reports. */

/** A commit as people quote it: its first 7 hex digits ("none" when there is none). */
export const shortSha = (sha: string | null | undefined): string => (sha ? sha.slice(0, 7) : "none");

/** "1 team", "3 teams". */
export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;
