import type { SandboxClient } from '@sbx/client';

/** The renegotiated client for a stale failure, or undefined when the failure is an answer. */
export type Renegotiate = (err: unknown) => Promise<SandboxClient> | undefined;

/**
 * The SandboxClient the commands get: a method of the client, its `files` or its `exec`
 * runs on the current client and, when its promise fails because the binding is stale,
 * once more on the renegotiated one. A Proxy, so every command (and SDK method) is covered
 * without knowing. Never run again: a call given a stream (its body is spent), one that
 * returns no promise (a handle such as a watch), a call on the renegotiated client.
 */
export function renegotiatingClient(first: SandboxClient, renegotiate: Renegotiate): SandboxClient {
  let current = first;
  const facade = <T extends object>(pick: (client: SandboxClient) => T, nested: object = {}): T =>
    new Proxy(pick(first), {
      get(_target, name) {
        if (Object.hasOwn(nested, name)) return Reflect.get(nested, name);
        const value: unknown = Reflect.get(pick(current), name);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]): unknown => {
          const callOn = (client: SandboxClient): unknown => {
            const api = pick(client);
            const method: unknown = Reflect.get(api, name);
            if (typeof method !== 'function') throw new TypeError(`${String(name)} is not a method`);
            return Reflect.apply(method, api, args);
          };
          const ranOn = current;
          const result = callOn(ranOn);
          if (!(result instanceof Promise) || ranOn !== first) return result;
          if (args.some((arg) => arg instanceof ReadableStream)) return result;
          return result.catch(async (err: unknown) => {
            const next = renegotiate(err);
            if (next === undefined) throw err;
            current = await next;
            return callOn(current);
          });
        };
      },
    });
  const files = facade((client) => client.files);
  const exec = facade((client) => client.exec);
  return facade((client) => client, { files, exec });
}
