import { setTimeout as sleep } from 'node:timers/promises';
import type { SbxError } from '@sbx/protocol';
import type { SigningKey } from '@sbx/tokens';
import {
  assertSandboxId,
  providerUnavailable,
  sandboxExists,
  sandboxNotFound,
  type AgentExitListener,
  type AgentReport,
  type Dataplane,
  type ProviderSandboxStatus,
  type Revocation,
  type SandboxProvider,
  type SandboxSpec,
  type WarmClaim,
} from './provider.js';
import { SerialQueue } from './serial-queue.js';

const FAKE_OPERATIONS = ['create', 'start', 'stop', 'destroy'] as const;
export type FakeOperation = (typeof FAKE_OPERATIONS)[number];

export interface FakeProviderOptions {
  readonly isolation?: SandboxProvider['isolation'];
  /** Milliseconds each operation takes (default 0). */
  readonly delays?: Partial<Record<FakeOperation, number>>;
  readonly onAgentExit?: AgentExitListener;
  /** Where its sandboxes' processes would see their workspace (default `/workspace`). */
  readonly workspacePath?: string;
}

interface FakeSandbox {
  readonly spec: SandboxSpec;
  state: 'starting' | 'running' | 'stopped' | 'failed';
  dataplane: Dataplane | undefined;
}

/**
 * A TEST DOUBLE of `SandboxProvider` for broker tests that must not start processes
 * (negotiation, leases, concurrency). It keeps the same contract as the local provider
 * (test/providers/provider-contract.ts runs against both) and adds controls: delays,
 * injected failures, gates that hold operations until released, simulated agent
 * crashes, and a record of calls. Its dataplane URLs (`*.sandbox.invalid`) resolve nowhere.
 */
export class FakeProvider implements SandboxProvider {
  readonly name = 'fake';
  readonly isolation: SandboxProvider['isolation'];
  readonly #options: FakeProviderOptions;
  readonly #sandboxes = new Map<string, FakeSandbox>();
  readonly #queue = new SerialQueue();
  readonly #delays = new Map<FakeOperation, number>();
  readonly #failures = new Map<FakeOperation, SbxError[]>();
  readonly #gates = new Map<FakeOperation, Promise<void>>();
  readonly #calls: { readonly operation: FakeOperation; readonly sandboxId: string }[] = [];
  readonly #inFlight = new Map<FakeOperation, { now: number; max: number }>();
  /** Every `revoke` and `rotateKey`, in call order. */
  readonly revocations: (
    | { readonly kind: 'revoke'; readonly sandboxId: string; readonly revocation: Revocation }
    | { readonly kind: 'rotateKey'; readonly sandboxId: string; readonly key: SigningKey }
  )[] = [];
  /** What `inspect` answers for a running sandbox (nothing by default): set it per sandbox. */
  readonly reports = new Map<string, AgentReport>();
  /** What each warm sandbox was handed when claimed. */
  readonly claims = new Map<string, WarmClaim>();
  #nextHost = 1;
  #closed = false;

  constructor(options: FakeProviderOptions = {}) {
    this.#options = options;
    this.isolation = options.isolation ?? 'none';
    for (const operation of FAKE_OPERATIONS) {
      const ms = options.delays?.[operation];
      if (ms !== undefined) this.#delays.set(operation, ms);
    }
  }

  setDelay(operation: FakeOperation, ms: number): void {
    this.#delays.set(operation, ms);
  }

  /** The next `operation` fails with `error` (PROVIDER_UNAVAILABLE by default); calls queue up. */
  failNext(
    operation: FakeOperation,
    error: SbxError = providerUnavailable(`injected ${operation} failure`),
  ): void {
    this.#failures.set(operation, [...(this.#failures.get(operation) ?? []), error]);
  }

  /** Holds every `operation` (after it is recorded) until the returned function is called. */
  hold(operation: FakeOperation): () => void {
    let release: (() => void) | undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.#gates.set(operation, gate);
    return () => {
      if (this.#gates.get(operation) === gate) this.#gates.delete(operation);
      release?.();
    };
  }

  /** Simulates the sandbox's agent dying: status becomes 'failed' and `onAgentExit` fires. */
  crash(sandboxId: string, code = 1): void {
    const sandbox = this.#sandboxes.get(sandboxId);
    if (sandbox?.state !== 'running') throw new Error(`fake sandbox ${sandboxId} is not running`);
    sandbox.state = 'failed';
    sandbox.dataplane = undefined;
    this.#options.onAgentExit?.(sandboxId, code, null);
  }

  /** Sandbox ids `operation` was called with, in call order (failed calls included). */
  calls(operation: FakeOperation): readonly string[] {
    return this.#calls.filter((call) => call.operation === operation).map((call) => call.sandboxId);
  }

  /** The most `operation`s that were in progress at once. */
  maxConcurrent(operation: FakeOperation): number {
    return this.#inFlight.get(operation)?.max ?? 0;
  }

  /** The spec a sandbox was created with (its key included), for assertions. */
  specOf(sandboxId: string): SandboxSpec | undefined {
    return this.#sandboxes.get(sandboxId)?.spec;
  }

  async create(spec: SandboxSpec): Promise<{ providerRef: string; dataplane: Dataplane }> {
    assertSandboxId(spec.sandboxId);
    this.#assertOpen();
    return this.#operate('create', spec.sandboxId, async () => {
      if (this.#sandboxes.has(spec.sandboxId)) throw sandboxExists(spec.sandboxId);
      const sandbox: FakeSandbox = { spec, state: 'starting', dataplane: undefined };
      this.#sandboxes.set(spec.sandboxId, sandbox);
      try {
        await this.#act('create');
      } catch (err) {
        this.#sandboxes.delete(spec.sandboxId);
        throw err;
      }
      return { providerRef: `fake:${spec.sandboxId}`, dataplane: this.#run(sandbox) };
    });
  }

  async start(sandboxId: string): Promise<Dataplane> {
    assertSandboxId(sandboxId);
    this.#assertOpen();
    return this.#operate('start', sandboxId, async () => {
      const sandbox = this.#existing(sandboxId);
      if (sandbox.state === 'running' && sandbox.dataplane !== undefined) return sandbox.dataplane;
      sandbox.state = 'starting';
      try {
        await this.#act('start');
      } catch (err) {
        sandbox.state = 'failed';
        throw err;
      }
      return this.#run(sandbox);
    });
  }

  async stop(sandboxId: string): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#operate('stop', sandboxId, async () => {
      const sandbox = this.#existing(sandboxId);
      await this.#act('stop');
      sandbox.state = 'stopped';
      sandbox.dataplane = undefined;
    });
  }

  async destroy(sandboxId: string): Promise<void> {
    assertSandboxId(sandboxId);
    await this.#operate('destroy', sandboxId, async () => {
      await this.#act('destroy');
      this.#sandboxes.delete(sandboxId);
    });
  }

  async status(sandboxId: string): Promise<ProviderSandboxStatus> {
    assertSandboxId(sandboxId);
    return this.#sandboxes.get(sandboxId)?.state ?? 'missing';
  }

  async list(): Promise<readonly string[]> {
    return [...this.#sandboxes.keys()].toSorted();
  }

  async inspect(sandboxId: string): Promise<AgentReport | undefined> {
    assertSandboxId(sandboxId);
    return this.#sandboxes.get(sandboxId)?.state === 'running' ? this.reports.get(sandboxId) : undefined;
  }

  /** Recorded only; its dataplane serves nobody whose tokens could be refused. */
  async revoke(sandboxId: string, revocation: Revocation): Promise<void> {
    assertSandboxId(sandboxId);
    this.#existing(sandboxId);
    this.revocations.push({ kind: 'revoke', sandboxId, revocation });
  }

  async claim(sandboxId: string, claim: WarmClaim): Promise<void> {
    assertSandboxId(sandboxId);
    this.#existing(sandboxId);
    this.claims.set(sandboxId, claim);
  }

  async rotateKey(sandboxId: string, key: SigningKey): Promise<void> {
    assertSandboxId(sandboxId);
    this.#existing(sandboxId);
    this.revocations.push({ kind: 'rotateKey', sandboxId, key });
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#queue.settled();
    for (const sandbox of this.#sandboxes.values()) {
      if (sandbox.state !== 'failed') sandbox.state = 'stopped';
      sandbox.dataplane = undefined;
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw providerUnavailable('the fake provider is shut down');
  }

  #existing(sandboxId: string): FakeSandbox {
    const sandbox = this.#sandboxes.get(sandboxId);
    if (sandbox === undefined) throw sandboxNotFound(sandboxId);
    return sandbox;
  }

  #run(sandbox: FakeSandbox): Dataplane {
    const host = `fake-${this.#nextHost++}.sandbox.invalid`;
    sandbox.state = 'running';
    sandbox.dataplane = {
      httpBaseUrl: `http://${host}`,
      wsBaseUrl: `ws://${host}`,
      workspacePath: this.#options.workspacePath ?? '/workspace',
    };
    return sandbox.dataplane;
  }

  /** Records the call, counts it in flight and runs it after earlier calls on the same sandbox. */
  async #operate<T>(operation: FakeOperation, sandboxId: string, body: () => Promise<T>): Promise<T> {
    this.#calls.push({ operation, sandboxId });
    return this.#queue.run(sandboxId, async () => {
      const counter = this.#inFlight.get(operation) ?? { now: 0, max: 0 };
      this.#inFlight.set(operation, counter);
      counter.now += 1;
      counter.max = Math.max(counter.max, counter.now);
      try {
        return await body();
      } finally {
        counter.now -= 1;
      }
    });
  }

  /** The part every operation shares: its gate, its delay, then an injected failure if one is queued. */
  async #act(operation: FakeOperation): Promise<void> {
    await this.#gates.get(operation);
    const delay = this.#delays.get(operation) ?? 0;
    if (delay > 0) await sleep(delay);
    const failure = this.#failures.get(operation)?.shift();
    if (failure !== undefined) throw failure;
  }
}
