// execute_code's caps without a database round trip on an agent's next calls: after a
// call takes its unit, a few more units of the same counters are taken in the background
// and held for that agent's next calls (docs/execute-code.md "Quotas"). Every unit is still
// counted in the database before any code runs with it, so a cap is never exceeded, and
// the counters survive a restart. What a held unit changes:
// - A counter may read a few more than the calls made while units are held. Units not used
//   within `idleMs` are given back; so is every unit when the broker shuts down (a crash
//   leaves it counted: fewer calls, never more).
// - A call refused by the database first gives back the units its tenant holds in this
//   process and asks again, so one process serves a cap exactly.
// - Units are held per caps and windows: a changed cap (the kill switch) or a new window
//   never uses a unit taken under the old ones.
import type { Logger } from '@sbx/service-kit';
import type { QuotaCounter, QuotaTake } from '../../store/index.js';

export interface QuotaStore {
  take(counters: readonly [QuotaCounter, QuotaCounter], units?: number): Promise<QuotaTake>;
  giveBack(counters: readonly [QuotaCounter, QuotaCounter], units?: number): Promise<void>;
}

type Counters = readonly [QuotaCounter, QuotaCounter];

interface Held {
  readonly counters: Counters;
  /** Caps and windows: a unit serves only a call with the same. */
  readonly terms: string;
  state: 'taking' | 'held';
  /** Units held, while `held`. */
  units: number;
  taking: Promise<void> | undefined;
  idle: NodeJS.Timeout | undefined;
}

const DEFAULT_IDLE_MS = 30_000;
/** Units taken ahead at once: a database round trip for every few calls of a busy agent. */
const DEFAULT_UNITS_AHEAD = 4;
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
    private readonly unitsAhead = DEFAULT_UNITS_AHEAD,
  ) {}

  /** One unit of both counters, the tenant's day first: a held one, or one from the store. */
  async take(counters: Counters): Promise<QuotaTake> {
    const key = counters[1].subject;
    const terms = termsOf(counters);
    const held = this.#held.get(key);
    if (held !== undefined && held.terms !== terms) void this.#giveBack(key, held);
    else if (held?.state === 'held') {
      held.units -= 1;
      if (held.units > 0) this.#armIdle(key, held);
      else {
        this.#forget(key, held);
        this.#reserve(key, counters, terms);
      }
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
    await Promise.all([...this.#held.values()].map(async (held) => held.taking));
    await Promise.all([...this.#held].map(([key, held]) => this.#giveBack(key, held)));
  }

  #reserve(key: string, counters: Counters, terms: string): void {
    if (this.#held.has(key)) return;
    const held: Held = { counters, terms, state: 'taking', units: 0, taking: undefined, idle: undefined };
    this.#held.set(key, held);
    held.taking = this.#fill(key, held).finally(() => {
      held.taking = undefined;
    });
  }

  /** Takes units ahead into `held`, unless it was forgotten meanwhile (then they go back). */
  async #fill(key: string, held: Held): Promise<void> {
    let units: number;
    try {
      units = await this.#takeAhead(held.counters);
    } catch (err) {
      this.#forget(key, held);
      this.logger.warn({ err }, 'execute_code: taking units ahead failed; the next call takes its own');
      return;
    }
    if (this.#held.get(key) !== held || units === 0) {
      this.#forget(key, held);
      if (units > 0) await this.#returnUnits(held.counters, units);
      return;
    }
    held.state = 'held';
    held.units = units;
    this.#armIdle(key, held);
  }

  /** As many units as the caps allow, up to `unitsAhead`; 0 when not even one is left. */
  async #takeAhead(counters: Counters): Promise<number> {
    if ((await this.store.take(counters, this.unitsAhead)).taken) return this.unitsAhead;
    if (this.unitsAhead > 1 && (await this.store.take(counters, 1)).taken) return 1;
    return 0;
  }

  #armIdle(key: string, held: Held): void {
    clearTimeout(held.idle);
    held.idle = setTimeout(() => void this.#giveBack(key, held), this.idleMs).unref();
  }

  /** Waits for the tenant's units being taken, then gives back those held; how many. */
  async #releaseTenant(tenant: string): Promise<number> {
    const ofTenant = [...this.#held].filter(([, held]) => held.counters[0].subject === tenant);
    await Promise.all(ofTenant.map(async ([, held]) => held.taking));
    const given = await Promise.all(ofTenant.map(([key, held]) => this.#giveBack(key, held)));
    return given.filter(Boolean).length;
  }

  /** True when held units went back to the store. */
  async #giveBack(key: string, held: Held): Promise<boolean> {
    if (this.#held.get(key) !== held) return false;
    this.#forget(key, held);
    if (held.state !== 'held' || held.units === 0) return false;
    return this.#returnUnits(held.counters, held.units);
  }

  async #returnUnits(counters: Counters, units: number): Promise<boolean> {
    try {
      await this.store.giveBack(counters, units);
      return true;
    } catch (err) {
      this.logger.warn({ err }, 'execute_code: units taken ahead could not be given back');
      return false;
    }
  }

  #forget(key: string, held: Held): void {
    clearTimeout(held.idle);
    if (this.#held.get(key) === held) this.#held.delete(key);
  }
}
