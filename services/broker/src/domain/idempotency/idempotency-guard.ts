// Idempotency-Key semantics (IETF httpapi idempotency-key draft), per principal:
//  - the first request with a key runs; its successful answer is stored and
//    replayed exactly (status and body) to later requests with the same key
//    and the same body;
//  - the same key with another body is refused: 422 IDEMPOTENCY_KEY_REUSED;
//  - a duplicate arriving while the first still runs waits for it (bounded)
//    and replays its answer; past the bound it gets 409 CONFLICT, retryable
//    with the same key;
//  - a failed request stores nothing, so retrying with the same key runs again;
//  - a claim whose holder (a broker instance) is known dead - killed mid-request -
//    is taken over at once by a duplicate, which then runs the request itself;
//  - a stored answer is replayed only while the token inside it is valid:
//    after that the key is free and a retry negotiates afresh (ensure is
//    idempotent by nature, so it returns the same binding with a new token).
import { setTimeout as sleep } from 'node:timers/promises';
import { SbxError } from '@sbx/protocol';
import type { IdempotencyKeyRef, IdempotencyRecordRow, IdempotencyRepository } from '../../store/index.js';
import type { KeyVault } from '../keys/key-vault.js';

export interface IdempotentResponse {
  readonly status: number;
  readonly body: unknown;
  /** The stored answer is not replayed after this (the token it carries expires). */
  readonly replayUntil?: Date;
}

export interface IdempotencyOutcome {
  readonly status: number;
  readonly body: unknown;
  readonly replayed: boolean;
}

export interface IdempotencySettings {
  /** Longest a stored answer is replayed (default 24 h). */
  readonly retentionMs: number;
  /** After this an unfinished claim counts as abandoned (its holder died); default 2 min. */
  readonly claimTimeoutMs: number;
  /** How long a duplicate waits for the first request to finish (default 10 s). */
  readonly waitMs: number;
}

export const DEFAULT_IDEMPOTENCY_SETTINGS: IdempotencySettings = Object.freeze({
  retentionMs: 24 * 3600_000,
  claimTimeoutMs: 120_000,
  waitMs: 10_000,
});

/**
 * Which broker instance this is, and whether another one is still alive (its presence,
 * instance-presence.ts). Without it, an abandoned claim is freed only when it expires.
 */
export interface ClaimHolders {
  readonly instanceId: string;
  isAlive(instanceId: string): Promise<boolean>;
}

const MAX_ROUNDS = 5;
type Waited = IdempotencyRecordRow | 'gone' | 'timeout';

export class IdempotencyGuard {
  constructor(
    private readonly repo: IdempotencyRepository,
    private readonly vault: KeyVault,
    private readonly settings: IdempotencySettings = DEFAULT_IDEMPOTENCY_SETTINGS,
    private readonly now: () => number = Date.now,
    private readonly holders?: ClaimHolders,
  ) {}

  async run(
    ref: IdempotencyKeyRef,
    requestHash: string,
    execute: () => Promise<IdempotentResponse>,
  ): Promise<IdempotencyOutcome> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const expiresAt = new Date(this.now() + this.settings.claimTimeoutMs);
      const holderId = this.holders?.instanceId;
      const claim = await this.repo.claim({
        ...ref,
        requestHash,
        expiresAt,
        ...(holderId ? { holderId } : {}),
      });
      if (claim.claimed) return this.#execute(ref, execute);
      const existing = claim.existing;
      if (existing.expiresAt.getTime() <= this.now()) {
        await this.repo.remove(ref, { expiredBefore: new Date(this.now()) });
        continue;
      }
      if (existing.requestHash !== requestHash) throw keyReused();
      if (await this.#abandoned(ref, existing)) continue;
      const finished = existing.status === null ? await this.#waitFor(ref, requestHash) : existing;
      if (finished === 'timeout') throw stillRunning();
      if (finished !== 'gone') return this.#replay(ref, finished);
    }
    throw stillRunning();
  }

  async #execute(
    ref: IdempotencyKeyRef,
    execute: () => Promise<IdempotentResponse>,
  ): Promise<IdempotencyOutcome> {
    let response: IdempotentResponse;
    try {
      response = await execute();
    } catch (err) {
      await this.repo.remove(ref).catch(() => undefined); // the claim expires anyway
      throw err;
    }
    const until = Math.min(
      this.now() + this.settings.retentionMs,
      response.replayUntil?.getTime() ?? Infinity,
    );
    if (until <= this.now()) await this.repo.remove(ref);
    else {
      const sealed = this.vault.seal(Buffer.from(JSON.stringify(response.body), 'utf8'), contextOf(ref));
      await this.repo.complete(ref, response.status, sealed, new Date(until));
    }
    return { status: response.status, body: response.body, replayed: false };
  }

  #replay(ref: IdempotencyKeyRef, row: IdempotencyRecordRow): IdempotencyOutcome {
    if (row.status === null || row.responseCipher === null) throw stillRunning();
    const body: unknown = JSON.parse(this.vault.open(row.responseCipher, contextOf(ref)).toString('utf8'));
    return { status: row.status, body, replayed: true };
  }

  async #waitFor(ref: IdempotencyKeyRef, requestHash: string): Promise<Waited> {
    const deadline = this.now() + this.settings.waitMs;
    for (let pause = 20; this.now() < deadline; pause = Math.min(pause * 2, 250)) {
      await sleep(pause);
      const row = await this.repo.find(ref);
      if (row === null) return 'gone';
      if (row.requestHash !== requestHash) throw keyReused();
      if (row.status !== null) return row;
      if (await this.#abandoned(ref, row)) return 'gone';
    }
    return 'timeout';
  }

  /** Frees an unfinished claim whose holder died; true when it was freed (by this call or another). */
  async #abandoned(ref: IdempotencyKeyRef, row: IdempotencyRecordRow): Promise<boolean> {
    const holder = row.holderId;
    if (row.status !== null || holder === null || this.holders === undefined) return false;
    if (holder === this.holders.instanceId || (await this.holders.isAlive(holder))) return false;
    await this.repo.removeAbandoned(ref, holder);
    return true;
  }
}

function contextOf(ref: IdempotencyKeyRef): string {
  return `idempotency:${JSON.stringify([ref.tenantId, ref.principalId, ref.key])}`;
}

function keyReused(): SbxError {
  return new SbxError(
    'IDEMPOTENCY_KEY_REUSED',
    'this Idempotency-Key was used with a different request; use a new key for a new request',
  );
}

function stillRunning(): SbxError {
  return new SbxError('CONFLICT', 'a request with this Idempotency-Key is still in progress; retry shortly', {
    retryAfterSeconds: 1,
  });
}
