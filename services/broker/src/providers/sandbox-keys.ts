// A local sandbox's key material and client variables, as files next to its record: the
// revocation list and `agent.key` the agent watches, and the variables of a claimed warm
// sandbox. Revocations and key rotations have a queue of their own: they must not wait
// behind a slow start.
import type { SigningKey } from '@sbx/tokens';
import { readinessToken } from './agent-readiness.js';
import type { LiveAgent } from './live-agent.js';
import { assertSandboxId, providerUnavailable, type Revocation, type WarmClaim } from './provider.js';
import { addRevocations, replaceFile, replaceKeyFile } from './revocation-file.js';
import { existingSandboxPaths } from './sandbox-layout.js';
import { SerialQueue } from './serial-queue.js';

export class SandboxKeys {
  readonly #queue = new SerialQueue();

  constructor(
    private readonly dataDir: string,
    /** The provider's running agents: a rotated key signs their health probes from then on. */
    private readonly agents: ReadonlyMap<string, LiveAgent>,
  ) {}

  /** Merges into `revocations.json` next to the key file, which the agent watches. */
  async revoke(sandboxId: string, revocation: Revocation): Promise<void> {
    assertSandboxId(sandboxId);
    const paths = await existingSandboxPaths(this.dataDir, sandboxId);
    await this.#queue
      .run(sandboxId, () => addRevocations(paths.stateDir, revocation, Date.now()))
      .catch((err: unknown) => {
        throw providerUnavailable(`the revocation list of sandbox ${sandboxId} could not be written`, err);
      });
  }

  /** The claimant's variables reach the next user process (a warm sandbox's file was made empty). */
  async claim(sandboxId: string, claim: WarmClaim): Promise<void> {
    // Nothing to write for a caller without a client policy (the common claim, and a burst
    // of them queues on file I/O).
    if (Object.keys(claim.environment).length === 0) return;
    const paths = await existingSandboxPaths(this.dataDir, sandboxId);
    await replaceFile(paths.envFile, JSON.stringify(claim.environment));
  }

  /** Replaces `agent.key`; the agent reads it now when `revoke({notBefore})` follows, else within its check. */
  async rotateKey(sandboxId: string, key: SigningKey): Promise<void> {
    assertSandboxId(sandboxId);
    const paths = await existingSandboxPaths(this.dataDir, sandboxId);
    await this.#queue.run(sandboxId, async () => {
      await replaceKeyFile(paths.keyFile, key).catch((err: unknown) => {
        throw providerUnavailable(`the key of sandbox ${sandboxId} could not be replaced`, err);
      });
      const live = this.agents.get(sandboxId);
      const record = live?.record;
      if (live !== undefined && record !== undefined)
        live.bearer = () => readinessToken(key, sandboxId, record.tokenIssuer);
    });
  }
}
