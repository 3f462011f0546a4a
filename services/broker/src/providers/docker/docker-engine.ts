// Calls to the Docker engine with one error policy: the engine's failures become
// PROVIDER_UNAVAILABLE with a message of the provider's own (the engine's answer is kept as the
// cause, for the log), and "no such …" is told apart where absence is an answer.
import type Docker from 'dockerode';
import { SbxError } from '@sbx/protocol';
import { providerUnavailable } from '../provider.js';

/** What docker-modem attaches to a failed request. */
function statusCodeOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null || !('statusCode' in err)) return undefined;
  return typeof err.statusCode === 'number' ? err.statusCode : undefined;
}

function engineMessageOf(err: unknown): string {
  if (typeof err !== 'object' || err === null || !('json' in err)) return '';
  const json = err.json;
  return typeof json === 'object' && json !== null && 'message' in json && typeof json.message === 'string'
    ? json.message
    : '';
}

export function isNotFound(err: unknown): boolean {
  return statusCodeOf(err) === 404;
}

/** A name in use: another broker (or this one, earlier) holds it. */
export function isConflict(err: unknown): boolean {
  return statusCodeOf(err) === 409;
}

/** Already started / already stopped: the engine says 304, the provider wanted that state anyway. */
export function isNotModified(err: unknown): boolean {
  return statusCodeOf(err) === 304;
}

/**
 * Runs one engine call; a failure becomes PROVIDER_UNAVAILABLE naming what could not be done,
 * the HTTP status and nothing else of the engine's text (it may quote the request).
 */
export async function engine<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw engineError(what, err);
  }
}

export function engineError(what: string, err: unknown): SbxError {
  if (err instanceof SbxError) return err;
  const status = statusCodeOf(err);
  if (status === 404 && /no such image/i.test(engineMessageOf(err)))
    return providerUnavailable(
      `the docker engine could not ${what}: the image is not on the engine (build or pull it)`,
      err,
    );
  const detail = status === undefined ? 'the engine did not answer' : `HTTP ${status}`;
  return providerUnavailable(`the docker engine could not ${what} (${detail})`, err);
}

/** The container's inspection, or undefined when there is no such container. */
export async function inspectOrUndefined(
  container: Docker.Container,
  what: string,
): Promise<Docker.ContainerInspectInfo | undefined> {
  try {
    return await container.inspect();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw engineError(what, err);
  }
}

/** Removes a container (running or not) and says nothing when it is already gone. */
export async function removeContainer(container: Docker.Container, what: string): Promise<void> {
  try {
    await container.remove({ force: true, v: false });
  } catch (err) {
    if (!isNotFound(err)) throw engineError(what, err);
  }
}

/** Gone already is fine; the engine's error is passed on as is (a 409 means the volume is in use). */
export async function removeVolume(volume: Docker.Volume): Promise<void> {
  try {
    await volume.remove();
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

export async function startContainer(container: Docker.Container, what: string): Promise<void> {
  try {
    await container.start();
  } catch (err) {
    if (!isNotModified(err)) throw engineError(what, err);
  }
}

export async function stopContainer(
  container: Docker.Container,
  graceSeconds: number,
  what: string,
): Promise<void> {
  try {
    await container.stop({ t: graceSeconds });
  } catch (err) {
    if (!isNotModified(err) && !isNotFound(err)) throw engineError(what, err);
  }
}
