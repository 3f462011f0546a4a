// One real broker for the tests of the calling file or describe block: a test
// database of the given backend, a provider (a FakeProvider unless the test
// makes another) reporting agent exits to the broker, and the broker's own
// assembly behind a server on 127.0.0.1:0. Started in a beforeAll, and
// everything it made (broker instances, provider, database) closed in an afterAll.
//
//   describeEachBackend('sessions', (backend) => {
//     const broker = useBroker(backend, { settings: { provisioningWaitMs: 300 } });
//     // then, in the tests:
//     const key = await broker.apiKey({ scopes: ['write:sandbox'] });
//     await request(broker.url).post('/v1/sandbox/sessions').set(bearer(key)).send({…});
//     await broker.database.prisma.sandbox.count();
//   });
import { afterAll, beforeAll } from '@jest/globals';
import { agentExitRelay } from '../../src/broker-adapters.js';
import { FakeProvider } from '../../src/providers/fake-provider.js';
import type { AgentExitListener, SandboxProvider } from '../../src/providers/provider.js';
import { startBrokerHarness, type BrokerHarness, type BrokerHarnessOptions } from './broker-harness.js';
import { OPEN_TIMEOUT_MS, type TestBackend, type TestDatabase } from './test-database.js';

/** Opens the file's provider, closed after its tests; it must report agent exits to `onAgentExit`. */
export type ProviderFactory<P extends SandboxProvider> = (onAgentExit: AgentExitListener) => P | Promise<P>;

export interface UseBrokerOptions<P extends SandboxProvider> extends Omit<
  BrokerHarnessOptions<P>,
  'database' | 'provider' | 'agentExits'
> {
  /** Default: a FakeProvider. */
  readonly provider?: ProviderFactory<P>;
}

/** Options, or a function the beforeAll calls for them (when they need what an earlier beforeAll started). */
export type BrokerSetup<O> = O | (() => O);

export type InstanceOptions<P extends SandboxProvider> = Partial<
  Omit<BrokerHarnessOptions<P>, 'database' | 'provider' | 'agentExits'>
>;

export interface BrokerFixture<P extends SandboxProvider> extends Omit<
  BrokerHarness<P>,
  'close' | typeof Symbol.asyncDispose
> {
  /** The test database the broker runs on. */
  readonly database: TestDatabase;
  /**
   * Another broker instance on the same database, provider and master key, with its own
   * server and (unless given) coordination store; closed after the tests with this one.
   */
  instance(options?: InstanceOptions<P>): Promise<BrokerHarness<P>>;
}

const fakeProvider: ProviderFactory<FakeProvider> = (onAgentExit) => new FakeProvider({ onAgentExit });

export function useBroker(
  backend: TestBackend,
  setup?: BrokerSetup<UseBrokerOptions<FakeProvider> & { readonly provider?: undefined }>,
): BrokerFixture<FakeProvider>;
export function useBroker<P extends SandboxProvider>(
  backend: TestBackend,
  setup: BrokerSetup<UseBrokerOptions<P> & { readonly provider: ProviderFactory<P> }>,
): BrokerFixture<P>;
export function useBroker(
  backend: TestBackend,
  setup: BrokerSetup<UseBrokerOptions<SandboxProvider>> = {},
): BrokerFixture<SandboxProvider> {
  /** What to close, in the order it was made (closed in reverse). */
  const made: (() => Promise<void>)[] = [];
  let started: { database: TestDatabase; main: BrokerHarness<SandboxProvider> } | undefined;

  beforeAll(async () => {
    const { provider: openProvider = fakeProvider, ...options } =
      typeof setup === 'function' ? setup() : setup;
    const database = await backend.open();
    made.push(() => database.close());
    const agentExits = agentExitRelay();
    const provider = await openProvider(agentExits.listener);
    made.push(() => provider.close());
    const main = await startBrokerHarness({ ...options, database, provider, agentExits });
    made.push(() => main.close());
    started = { database, main };
  }, OPEN_TIMEOUT_MS);

  afterAll(async () => {
    started = undefined;
    const failures: unknown[] = [];
    for (const close of made.splice(0).toReversed())
      await close().catch((err: unknown) => failures.push(err));
    if (failures.length > 0) throw new AggregateError(failures, 'useBroker: closing failed');
  }, OPEN_TIMEOUT_MS);

  const current = () => {
    if (started === undefined)
      throw new Error('useBroker(): the broker is used outside its beforeAll/afterAll');
    return started;
  };
  const harness = () => current().main;
  return {
    get database() {
      return current().database;
    },
    get url() {
      return harness().url;
    },
    get app() {
      return harness().app;
    },
    get server() {
      return harness().server;
    },
    get broker() {
      return harness().broker;
    },
    get provider() {
      return harness().provider;
    },
    get repositories() {
      return harness().repositories;
    },
    get coordination() {
      return harness().coordination;
    },
    get masterKey() {
      return harness().masterKey;
    },
    get vault() {
      return harness().vault;
    },
    get service() {
      return harness().service;
    },
    get reaper() {
      return harness().reaper;
    },
    get tenantId() {
      return harness().tenantId;
    },
    get logs() {
      return harness().logs;
    },
    apiKey: (key) => harness().apiKey(key),
    async instance(options = {}) {
      const { database, main } = current();
      const other = await startBrokerHarness({
        masterKey: main.masterKey,
        ...options,
        database,
        provider: main.provider,
      });
      made.push(() => other.close());
      return other;
    },
  };
}
