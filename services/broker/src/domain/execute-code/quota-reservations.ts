// execute_code's caps without a database round trip on an agent's next call: after a
// call takes its unit, one more unit of the same counters is taken in the background and
// held for that agent's next call (docs/execute-code.md "Quotas"). Every unit is still
// counted in the database before any code runs with it, so a cap is never exceeded, and
// the counters survive a restart. What a held unit changes:
// - A counter may read one more than the calls made while a unit is held. A unit not used
//   within `idleMs` is given back; so is every unit when the broker shuts down (a crash
//   leaves it counted: fewer calls, never more).
// - A call refused by the database first gives back the units its tenant holds in this
//   process and asks again, so one process serves a cap exactly.
// - Units are held per caps and windows: a changed cap (the kill switch) or a new window
//   never uses a unit taken under the old ones.
import type { Logger } from '@sbx/service-kit';
import type { QuotaCounter, QuotaTake } from '../../store/index.js';

export interface QuotaStore {
  take(counters: readonly [QuotaCounter, QuotaCounter]): Promise<QuotaTake>;
  giveBack(counters: readonly [QuotaCounter, QuotaCounter]): Promise<void>;
}

type Counters = readonly [QuotaCounter, QuotaCounter];

interface Held {
  readonly counters: Counters;
  /** Caps and windows: a unit serves only a call with the same. */
  readonly terms: string;
  state: 'taking' | 'held';
  taking: Promise<void> | undefined;
  idle: NodeJS.Timeout | undefined;
}

const DEFAULT_IDLE_MS = 30_000;
const TAKEN: QuotaTake = Object.freeze({ taken: true });

const termsOf = (counters: Counters): string =>
  counters.map((c) => `${c.dimension}\n${c.subject}\n${c.windowStart.getTime()}\n${c.cap}`).join('\n');

export class QuotaReservations {
  /** By agent counter subject (tenant and agent). */
  readonly #held = new Map<string, Held>();

  constructor(
    private readonly store: QuotaStore,
    private readonly logger: Logger,
    private readonly idleMs = DEFAULT_IDLE_MS,
  ) {}

  /** One unit of both counters, the tenant's day first: a held one, or one from the store. */
  async take(counters: Counters): Promise<QuotaTake> {
    const key = counters[1].subject;
    const terms = termsOf(counters);
    const held = this.#held.get(key);
    if (held !== undefined && held.terms !== terms) void this.#giveBack(key, held);
    else if (held?.state === 'held') {
      this.#forget(key, held);
      this.#reserve(key, counters, terms);
      return TAKEN;
    }
    let take = await this.store.take(counters);
    if (!take.taken && (await this.#releaseTenant(counters[0].subject)) > 0)
      take = await this.store.take(counters);
    if (take.taken) this.#reserve(key, counters, terms);
    return take;
  }

  /** Gives every held unit back, those still being taken included (shutdown). */
  async drain(): Promise<void> {
    await Promise.all([...this.#held.values()].map((held) => held.taking));
    await Promise.all([...this.#held].map(([key, held]) => this.#giveBack(key, held)));
  }

  #reserve(key: string, counters: Counters, terms: string): void {
    if (this.#held.has(key)) return;
    const held: Held = { counters, terms, state: 'taking', taking: undefined, idle: undefined };
    this.#held.set(key, held);
    held.taking = this.store
      .take(counters)
      .then((take) => {
        if (this.#held.get(key) !== held || !take.taken) {
          this.#forget(key, held);
          if (take.taken) void this.#returnUnit(counters);
          return;
        }
        held.state = 'held';
        held.idle = setTimeout(() => void this.#giveBack(key, held), this.idleMs).unref();
      })
      .catch((err: unknown) => {
        this.#forget(key, held);
        this.logger.warn({ err }, 'execute_code: taking a unit ahead failed; the next call takes its own');
      })
      .finally(() => {
        held.taking = undefined;
      });
  }

  /** Waits for the tenant's units being taken, then gives back those held; how many. */
  async #releaseTenant(tenant: string): Promise<number> {
    const ofTenant = [...this.#held].filter(([, held]) => held.counters[0].subject === tenant);
    await Promise.all(ofTenant.map(([, held]) => held.taking));
    const given = await Promise.all(ofTenant.map(([key, held]) => this.#giveBack(key, held)));
    return given.filter(Boolean).length;
  }

  /** True when a held unit went back to the store. */
  async #giveBack(key: string, held: Held): Promise<boolean> {
    if (this.#held.get(key) !== held) return false;
    this.#forget(key, held);
    if (held.state !== 'held') return false;
    return this.#returnUnit(held.counters);
  }

  async #returnUnit(counters: Counters): Promise<boolean> {
    try {
      await this.store.giveBack(counters);
      return true;
    } catch (err) {
      this.logger.warn({ err }, 'execute_code: a unit taken ahead could not be given back');
      return false;
    }
  }

  #forget(key: string, held: Held): void {
    clearTimeout(held.idle);
    if (this.#held.get(key) === held) this.#held.delete(key);
  }
}
