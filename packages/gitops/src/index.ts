export { FluxRepo, type FluxRepoStats, type ProposeResult, type TransactResult } from "./flux-repo.js";
export type { FluxRepoAuth, FluxRepoBatch, FluxRepoConfig } from "./config.js";
export { GitOpsError, type GitOpsErrorKind } from "./errors.js";
export {
  ForgeError,
  GiteaForge,
  type Forge,
  type GiteaForgeOptions,
  type PullRequest,
  type ReviewState,
} from "./forge.js";
export { GitHubForge, type GitHubForgeOptions } from "./github-forge.js";
export { GitTree } from "./git-tree.js";
export { RepoReader } from "./repo-reader.js";
export { assertWritablePath } from "./paths.js";
export {
  buildCommitMessage,
  MAX_TRAILER_VALUE,
  parseTrailers,
  sanitizeLine,
  trailerValue,
  TRAILER_ACTOR,
  TRAILER_KEY,
  TRAILER_REQUEST_ID,
} from "./commit-message.js";
export type { CommitSummary } from "./history.js";
