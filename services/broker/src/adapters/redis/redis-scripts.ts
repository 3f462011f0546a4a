import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * A Lua script run by its SHA1 (EVALSHA), falling back to sending the source
 * (EVAL) when this Redis has not cached it yet, e.g. after a restart. A
 * NOSCRIPT reply means nothing ran, so the fallback never runs a script twice.
 */
export class LuaScript {
  private readonly sha: string;

  constructor(private readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('NOSCRIPT'))) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

/**
 * KEYS[1] counter, ARGV[1] window in ms, ARGV[2] increment → {count, ms left}. The expiry is set
 * only when the key has none (just created), which makes the window fixed;
 * a counter left without expiry by anything else is given one rather than
 * counting forever.
 */
export const INCR_IN_WINDOW = new LuaScript(`
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`);

/** KEYS[1] lock, ARGV[1] holder token → 1 when deleted, 0 when the lock is not (any longer) the holder's. */
export const RELEASE_IF_HOLDER = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`);

/** KEYS[1] lock, ARGV[1] holder token, ARGV[2] new ttl in ms → 1 when extended, else 0. */
export const EXTEND_IF_HOLDER = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`);
