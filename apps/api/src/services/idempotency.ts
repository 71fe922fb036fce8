import type { PullRequestRef } from "@berth/api-contract";
import type { ChangeOrigin, CommitInfo, RepoChange, RepoTree, Trailer } from "@berth/core";
import { TRAILER_ACTOR, trailerValue } from "@berth/gitops";
import { IdempotencyKeyInUseError, IdempotencyKeyReusedError } from "./errors.js";

/**
 * Idempotency-Key (draft-ietf-httpapi-idempotency-key-header): a retried write with the same key and the
 * same request gets the original outcome instead of running again. The key and a fingerprint of the request
 * are recorded as commit trailers, so the outcome is found again from the Flux repo's history after a
 * restart and by every replica (docs/decisions/0011-idempotency-in-git-trailers.md).
 */

export const TRAILER_IDEMPOTENCY_KEY = "Berth-Idempotency-Key";
export const TRAILER_REQUEST_FINGERPRINT = "Berth-Request-Fingerprint";

export interface Idempotency {
  key: string;
  /** What "the same request" means: method, path and body (keys sorted), hashed. */
  fingerprint: string;
}

/**
 * One request per key at a time in this process (the draft's 409 for a retry that arrives while the
 * original is still running). Across replicas, the commit itself decides: see TeamService.write.
 */
export class KeysInFlight {
  private readonly held = new Set<string>();

  acquire(scope: string): () => void {
    if (this.held.has(scope)) {
      throw new IdempotencyKeyInUseError();
    }
    this.held.add(scope);
    return () => this.held.delete(scope);
  }
}

/** Who asked for a write (its commit's trailers), and its Idempotency-Key when it came with one. */
export interface WriteRequest {
  origin: ChangeOrigin;
  idempotency?: Idempotency;
}

/** The pull request a write was proposed in (pull-request mode, ADR 0030): it applies once merged. */
export type ReviewRef = PullRequestRef;

/** The writer's side of a transaction: what IdempotentWrites needs of the Flux repo. */
export interface TransactionStore {
  transact(
    mutate: (tree: RepoTree) => Promise<RepoChange | null>,
    origin: ChangeOrigin,
  ): Promise<{ revision: string; committed: boolean; files: string[]; review?: ReviewRef }>;
  snapshot(maxAgeMs?: number): Promise<RepoTree>;
}

export type IdempotentOutcome =
  | { replayed: false; revision: string; committed: boolean; review?: ReviewRef }
  /** An earlier request with this key and this fingerprint committed: its commit, to answer from. */
  | { replayed: true; original: CommitInfo; review?: ReviewRef };

function trailerOf(commit: CommitInfo, key: string): string | undefined {
  return commit.trailers.find((t) => t.key.toLowerCase() === key.toLowerCase())?.value;
}

/**
 * Writes that honour Idempotency-Key, for every write route (teams, rollouts). With a key, the transaction
 * first looks for an earlier commit of this principal with this key in the branch's recent history: found,
 * the caller answers with the original outcome (or 422 when the key came with another request) and nothing
 * is written. That look-up runs inside the transaction, on the tree the commit would build on, so two
 * replicas racing with one key still produce one commit: the loser's push is rejected, and its re-run finds
 * the winner's commit.
 */
export class IdempotentWrites {
  private readonly keysInFlight = new KeysInFlight();

  constructor(private readonly store: TransactionStore) {}

  /**
   * The commit of an earlier request with this request's key, in `tree`'s recent history: a retry to answer
   * from it. 422 when the key came with another request. Undefined without a key.
   */
  async original({ origin, idempotency }: WriteRequest, tree: RepoTree): Promise<CommitInfo | undefined> {
    if (!idempotency) return undefined;
    const found = await tree.findCommit([
      { key: TRAILER_IDEMPOTENCY_KEY, value: idempotency.key },
      { key: TRAILER_ACTOR, value: trailerValue(origin.actor) },
    ]);
    if (found && trailerOf(found, TRAILER_REQUEST_FINGERPRINT) !== idempotency.fingerprint) {
      throw new IdempotencyKeyReusedError(found.revision);
    }
    return found;
  }

  async write(
    request: WriteRequest,
    trailers: readonly Trailer[],
    mutate: (tree: RepoTree) => Promise<RepoChange | null>,
  ): Promise<IdempotentOutcome> {
    const { origin, idempotency } = request;
    const release = idempotency ? this.keysInFlight.acquire(`${origin.actor}\0${idempotency.key}`) : () => {};
    try {
      // A retry whose commit is already in the last fetched head is answered from there, without waiting
      // in the writer's queue (a retry storm after an outage stays cheap). Otherwise the transaction decides.
      let original = idempotency ? await this.original(request, await this.store.snapshot()) : undefined;
      if (original) return { replayed: true, original };
      const keyTrailers: Trailer[] = idempotency
        ? [
            { key: TRAILER_IDEMPOTENCY_KEY, value: idempotency.key },
            { key: TRAILER_REQUEST_FINGERPRINT, value: idempotency.fingerprint },
          ]
        : [];
      const result = await this.store.transact(
        async (tree) => {
          original = await this.original(request, tree);
          if (original) return null;
          return mutate(tree);
        },
        { ...origin, trailers: [...(origin.trailers ?? []), ...trailers, ...keyTrailers] },
      );
      if (original) return { replayed: true, original, ...(result.review ? { review: result.review } : {}) };
      return {
        replayed: false,
        revision: result.revision,
        committed: result.committed,
        ...(result.review ? { review: result.review } : {}),
      };
    } finally {
      release();
    }
  }
}
