// A broker's lifecycle parts over one test database: the real repositories,
// the fake provider, in-process coordination and a reaper, all on a clock the
// test moves by hand, plus the log lines they wrote.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { SigningKey } from '@sbx/tokens';
import { createLogger } from '@sbx/service-kit';
import type { Coordination } from '../../src/adapters/redis/coordination.js';
import { InProcessCoordination } from '../../src/adapters/redis/in-process-coordination.js';
import {
  createAgentExitHandler,
  type AgentExitHandler,
} from '../../src/domain/lifecycle/agent-exit-handler.js';
import {
  createLeaseReaper,
  type LeaseReaper,
  type LeaseReaperDeps,
} from '../../src/domain/lifecycle/lease-reaper.js';
import { FakeProvider } from '../../src/providers/fake-provider.js';
import { AuditRepository } from '../../src/store/audit-repository.js';
import type { PrismaClient } from '../../src/store/database.js';
import { ReaperRepository } from '../../src/store/reaper-repository.js';
import {
  SandboxRepository,
  type SandboxRecord,
  type SandboxState,
} from '../../src/store/sandbox-repository.js';
import { SessionBindingRepository } from '../../src/store/session-binding-repository.js';
import { newSandbox, uid } from '../store/fixtures.js';

export const IDLE_TIMEOUT_MS = 60_000;
export const SUSPEND_AFTER_IDLE_MS = 30_000;
export const PROVISIONING_TIMEOUT_MS = 120_000;
export const FAILED_RETENTION_MS = 600_000;
export const HARD_TTL_MS = 8 * 3_600_000;

export interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [field: string]: unknown;
}

export interface SeedOptions {
  readonly state?: SandboxState;
  /** Lease expiry relative to the clock (default IDLE_TIMEOUT_MS). */
  readonly leaseMs?: number;
  /** Hard expiry relative to the clock (default HARD_TTL_MS). */
  readonly hardMs?: number;
  readonly scope?: { readonly tenantId: string; readonly scopeId: string };
}

export interface LifecycleKit {
  readonly provider: FakeProvider;
  readonly sandboxes: SandboxRepository;
  readonly bindings: SessionBindingRepository;
  readonly audit: AuditRepository;
  readonly repository: ReaperRepository;
  readonly coordination: Coordination;
  readonly reaper: LeaseReaper;
  readonly agentExit: AgentExitHandler;
  readonly logs: LogLine[];
  readonly now: () => number;
  advance(ms: number): void;
  /** A sandbox recorded in `state` and, unless provisioning or final, present in the fake provider. */
  seed(options?: SeedOptions): Promise<SandboxRecord>;
  /** A live binding of a fresh human actor on the sandbox. */
  bind(sandbox: SandboxRecord): Promise<string>;
  state(sandboxId: string): Promise<SandboxRecord>;
  close(): Promise<void>;
}

export type KitOptions = Partial<
  Omit<LeaseReaperDeps, 'repository' | 'audit' | 'provider' | 'clock' | 'logger' | 'coordination'>
> & {
  /** Default: in-process, on the kit's clock; a given one is left open by close(). */
  readonly coordination?: Coordination;
};

export function createKit(prisma: PrismaClient, options: KitOptions = {}): LifecycleKit {
  let clock = Date.now();
  const now = (): number => clock;
  const logs: LogLine[] = [];
  const logger = createLogger({
    service: 'lifecycle-test',
    level: 'debug',
    destination: { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) },
  });
  const repository = new ReaperRepository(prisma);
  const agentExit = createAgentExitHandler({ repository, clock: now, logger });
  const provider = new FakeProvider({ onAgentExit: agentExit.listener });
  const sandboxes = new SandboxRepository(prisma);
  const bindings = new SessionBindingRepository(prisma);
  const audit = new AuditRepository(prisma);
  const coordination =
    options.coordination ?? new InProcessCoordination({ keyPrefix: `lifecycle-${randomUUID()}`, now });
  const reaper = createLeaseReaper({
    idleTimeoutMs: IDLE_TIMEOUT_MS,
    suspendAfterIdleMs: SUSPEND_AFTER_IDLE_MS,
    provisioningTimeoutMs: PROVISIONING_TIMEOUT_MS,
    failedRetentionMs: FAILED_RETENTION_MS,
    ...options,
    repository,
    audit,
    provider,
    coordination,
    clock: now,
    logger,
  });

  const seed = async (seedOptions: SeedOptions = {}): Promise<SandboxRecord> => {
    const input = newSandbox({
      provider: provider.name,
      ...seedOptions.scope,
      leaseExpiresAt: new Date(clock + (seedOptions.leaseMs ?? IDLE_TIMEOUT_MS)),
      hardExpiresAt: new Date(clock + (seedOptions.hardMs ?? HARD_TTL_MS)),
    });
    const created = await sandboxes.create(input);
    const target = seedOptions.state ?? 'active';
    if (target === 'provisioning') return created;
    await provider.create({
      sandboxId: input.id,
      tenantId: input.tenantId,
      signingKey: SigningKey.generate(),
      tokenIssuer: 'lifecycle-test',
      network: 'on',
    });
    const at = new Date(clock);
    await sandboxes.transition(input.id, 'active', { at });
    if (target === 'idle' || target === 'suspended') await sandboxes.transition(input.id, 'idle', { at });
    if (target === 'suspended') {
      await provider.stop(input.id);
      await sandboxes.transition(input.id, 'suspended', { at });
    }
    if (target === 'terminated' || target === 'failed') await sandboxes.transition(input.id, target, { at });
    return state(input.id);
  };

  const state = async (sandboxId: string): Promise<SandboxRecord> => {
    const found = await prisma.sandbox.findUnique({ where: { id: sandboxId } });
    if (found === null) throw new Error(`sandbox ${sandboxId} is not in the database`);
    return found;
  };

  return {
    provider,
    sandboxes,
    bindings,
    audit,
    repository,
    coordination,
    reaper,
    agentExit,
    logs,
    now,
    advance: (ms) => {
      clock += ms;
    },
    seed,
    async bind(sandbox) {
      const id = uid('binding');
      await bindings.create({
        id,
        sandboxId: sandbox.id,
        tenantId: sandbox.tenantId,
        ownerId: sandbox.ownerId,
        scopeType: sandbox.scopeType,
        scopeId: sandbox.scopeId,
        actorType: 'human',
        actorId: uid('user'),
        capabilities: ['files:read'],
      });
      return id;
    },
    state,
    async close() {
      await reaper.stop();
      await agentExit.drain();
      await provider.close();
      if (options.coordination === undefined) await coordination.close();
    },
  };
}

/** Polls until `check` holds (a background loop is being watched), failing after `timeoutMs`. */
export async function eventually(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}
