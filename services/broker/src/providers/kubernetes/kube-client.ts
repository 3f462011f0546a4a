// The Kubernetes API as this provider uses it: every request with a deadline, every failure
// turned into SbxError (PROVIDER_UNAVAILABLE, cause kept), and the two answers a caller
// handles itself (404 Not Found, 409 Already Exists) given back as values.
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  Observable,
  type ConfigurationOptions,
  type KubeConfig,
  type ObservableMiddleware,
} from '@kubernetes/client-node';
import { providerUnavailable } from '../provider.js';

type Options = ConfigurationOptions;

function statusOf(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

/** Aborts each request after `timeoutMs`: a hung API server must not hang the broker. */
function timeoutOptions(timeoutMs: number): Options {
  const middleware: ObservableMiddleware = {
    pre: (context) => {
      context.setSignal(AbortSignal.timeout(timeoutMs));
      return new Observable(Promise.resolve(context));
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

export class KubeClient {
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  readonly namespace: string;
  /** Pass to every call: `client.core.readNamespacedPod(params, client.options)`. */
  readonly options: Options;

  constructor(config: KubeConfig, namespace: string, timeoutMs: number) {
    this.core = config.makeApiClient(CoreV1Api);
    this.custom = config.makeApiClient(CustomObjectsApi);
    this.namespace = namespace;
    this.options = timeoutOptions(timeoutMs);
  }

  /** The answer, or PROVIDER_UNAVAILABLE naming `what` (403, 5xx, timeouts, refused connections). */
  async call<T>(what: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (err) {
      throw unavailable(what, err);
    }
  }

  /** Undefined when the object does not exist. */
  async find<T>(what: string, request: () => Promise<T>): Promise<T | undefined> {
    try {
      return await request();
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw unavailable(what, err);
    }
  }

  /** False when an object of that name exists already. */
  async create(what: string, request: () => Promise<unknown>): Promise<boolean> {
    try {
      await request();
      return true;
    } catch (err) {
      if (statusOf(err) === 409) return false;
      throw unavailable(what, err);
    }
  }

  /** Deleting what is already gone is fine. */
  async remove(what: string, request: () => Promise<unknown>): Promise<void> {
    try {
      await request();
    } catch (err) {
      if (statusOf(err) !== 404) throw unavailable(what, err);
    }
  }
}

/** 409 on an update: someone else changed the object in between (retry with a fresh read). */
export const isConflict = (err: unknown): boolean => err instanceof Error && statusOf(err.cause) === 409;

function unavailable(what: string, err: unknown): Error {
  const status = statusOf(err);
  return providerUnavailable(
    status === undefined ? `Kubernetes API: ${what} failed` : `Kubernetes API: ${what} answered ${status}`,
    err,
  );
}
