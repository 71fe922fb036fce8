export type Need = "cluster" | "aso" | "gitea" | "dist" | "image" | "sshd" | "chromium" | "tmux";
export const NEEDS: Record<Need, string>;
export function declaredNeeds(text: string, file?: string): Need[];
export function testFiles(root: string): Array<{ file: string; needs: Need[] }>;
