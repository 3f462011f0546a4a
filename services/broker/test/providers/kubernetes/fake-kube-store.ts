// The object store behind the fake Kubernetes API (fake-kube-api.ts): objects by collection
// (`core/pods`, `agents.x-k8s.io/sandboxes`…) and name, resourceVersions, label selectors.
import { randomUUID } from 'node:crypto';

export interface KubeObject {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

export interface StoreEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly collection: string;
  readonly object: KubeObject;
}

export function statusBody(code: number, message: string): object {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', message, code };
}

const clone = <T>(value: T): T => structuredClone(value);

export class FakeKubeStore {
  readonly #collections = new Map<string, Map<string, KubeObject>>();
  readonly #listeners: ((event: StoreEvent) => void)[] = [];
  #version = 1;

  /** Equality selectors only (`a=b,c=d`), which is all the provider sends. */
  static matches(object: KubeObject, selector: string | null): boolean {
    if (selector === null || selector === '') return true;
    return selector.split(',').every((term) => {
      const [key, value] = term.split('=');
      return key !== undefined && object.metadata.labels?.[key] === value;
    });
  }

  onEvent(listener: (event: StoreEvent) => void): void {
    this.#listeners.push(listener);
  }

  list(collection: string, selector: string | null = null): KubeObject[] {
    return [...this.#of(collection).values()].filter((o) => FakeKubeStore.matches(o, selector)).map(clone);
  }

  get(collection: string, name: string): KubeObject | undefined {
    const found = this.#of(collection).get(name);
    return found === undefined ? undefined : clone(found);
  }

  put(collection: string, object: KubeObject): KubeObject {
    const existing = this.#of(collection).get(object.metadata.name);
    const stored = clone(object);
    stored.metadata.resourceVersion = String((this.#version += 1));
    stored.metadata['uid'] ??= existing?.metadata['uid'] ?? randomUUID();
    stored.metadata['creationTimestamp'] ??= new Date().toISOString();
    if (collection === 'core/pods') stored['status'] ??= existing?.['status'] ?? { phase: 'Pending' };
    this.#of(collection).set(object.metadata.name, stored);
    this.#emit({ type: existing === undefined ? 'ADDED' : 'MODIFIED', collection, object: clone(stored) });
    return clone(stored);
  }

  remove(collection: string, name: string): KubeObject | undefined {
    const existing = this.#of(collection).get(name);
    if (existing === undefined) return undefined;
    this.#of(collection).delete(name);
    this.#emit({ type: 'DELETED', collection, object: clone(existing) });
    return clone(existing);
  }

  setStatus(collection: string, name: string, status: object): void {
    const existing = this.get(collection, name);
    if (existing !== undefined) this.put(collection, { ...existing, status });
  }

  /** One REST request: GET (one or a list), POST, PUT (at the resourceVersion read), DELETE. */
  apply(
    method: string,
    route: { collection: string; name: string | undefined },
    body: unknown,
    selector: string | null,
  ): { status: number; object: unknown } {
    const { collection, name } = route;
    if (method === 'GET' && name === undefined)
      return {
        status: 200,
        object: { kind: 'List', apiVersion: 'v1', metadata: {}, items: this.list(collection, selector) },
      };
    if (method === 'POST') {
      const object = body as KubeObject;
      if (this.#of(collection).has(object.metadata.name))
        return { status: 409, object: { ...statusBody(409, 'already exists'), reason: 'AlreadyExists' } };
      return { status: 201, object: this.put(collection, object) };
    }
    const existing = name === undefined ? undefined : this.#of(collection).get(name);
    if (existing === undefined)
      return { status: 404, object: { ...statusBody(404, 'not found'), reason: 'NotFound' } };
    if (method === 'GET') return { status: 200, object: clone(existing) };
    if (method === 'DELETE') return { status: 200, object: this.remove(collection, existing.metadata.name) };
    const object = body as KubeObject;
    if (method === 'PUT' && object.metadata.resourceVersion !== existing.metadata.resourceVersion)
      return {
        status: 409,
        object: { ...statusBody(409, 'the object has been modified'), reason: 'Conflict' },
      };
    if (method === 'PUT')
      return { status: 200, object: this.put(collection, { ...object, status: existing['status'] }) };
    return { status: 405, object: statusBody(405, `${method} is not served`) };
  }

  #of(collection: string): Map<string, KubeObject> {
    let objects = this.#collections.get(collection);
    if (objects === undefined) this.#collections.set(collection, (objects = new Map()));
    return objects;
  }

  #emit(event: StoreEvent): void {
    for (const listener of this.#listeners) listener(event);
  }
}
