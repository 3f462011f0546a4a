// `last_used_at` of API keys (GET /admin/api-keys): stamped as keys authenticate, at most
// once a minute per key in this process, and never on the request's path: the write is
// started after the request's own work is queued and is not awaited; a failed write is
// told to `onError` (the stamp is advisory: the next minute tries again).
import type { Clock } from '@sbx/tokens';

/** ApiKeyRepository.markUsed. */
export type MarkKeyUsed = (id: string, at: Date) => Promise<void>;

/** At most one write per key in this long. */
export const KEY_USAGE_INTERVAL_MS = 60_000;
const MAX_TRACKED_KEYS = 10_000;

export class KeyUsageMarker {
  /** Key id → when this process last stamped it; Map order is age order. */
  readonly #stamped = new Map<string, number>();

  constructor(
    private readonly markUsed: MarkKeyUsed,
    private readonly clock: Clock,
    private readonly onError: (err: unknown) => void = () => undefined,
    private readonly intervalMs = KEY_USAGE_INTERVAL_MS,
  ) {}

  /** The key authenticated a request now: stamps it unless it was stamped within the interval. */
  used(keyId: string): void {
    const now = this.clock();
    const last = this.#stamped.get(keyId);
    if (last !== undefined && now - last < this.intervalMs) return;
    this.#stamped.delete(keyId);
    while (this.#stamped.size >= MAX_TRACKED_KEYS) {
      const oldest = this.#stamped.keys().next();
      if (oldest.done === true) break;
      this.#stamped.delete(oldest.value);
    }
    this.#stamped.set(keyId, now);
    setImmediate(() => {
      this.markUsed(keyId, new Date(now)).catch(this.onError);
    });
  }
}

/**
 * One marker per store, so every authenticator of one repository shares the once-a-minute
 * budget (the first one's clock and error handler serve them all).
 */
const markers = new WeakMap<object, KeyUsageMarker>();

export function keyUsageMarkerOf(
  store: object,
  markUsed: MarkKeyUsed,
  clock: Clock,
  onError?: (err: unknown) => void,
): KeyUsageMarker {
  let marker = markers.get(store);
  if (marker === undefined) {
    marker = new KeyUsageMarker(markUsed, clock, onError);
    markers.set(store, marker);
  }
  return marker;
}
