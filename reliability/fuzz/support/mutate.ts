// Mutations of a valid value: one node of it (the root included) gets a wrong type, a
// huge or hostile value, or goes missing; an object gets fields it does not know.
import * as fc from 'fast-check';
import { hostileKey, weirdValue } from './weird-values.js';

export type MutationKind = 'valid' | 'replace' | 'delete' | 'extra-field' | 'wrong-type' | 'wrap';

export interface Mutated {
  readonly value: unknown;
  /** What was done, and where: for failure reports. */
  readonly mutation: string;
}

type Path = readonly (string | number)[];

/** Every node's path, root first, breadth first (at most 200: big values stay cheap). */
function pathsOf(value: unknown): Path[] {
  const paths: Path[] = [[]];
  for (let i = 0; i < paths.length && paths.length < 200; i++) {
    const path = paths[i]!;
    const node = path.reduce<unknown>((at, key) => (at as Record<string | number, unknown>)[key], value);
    if (Array.isArray(node)) node.forEach((_, index) => paths.push([...path, index]));
    else if (typeof node === 'object' && node !== null)
      for (const key of Object.keys(node)) paths.push([...path, key]);
  }
  return paths;
}

function setAt(value: unknown, path: Path, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const parent = path
    .slice(0, -1)
    .reduce<unknown>((at, key) => (at as Record<string | number, unknown>)[key], value);
  Object.defineProperty(parent, path[path.length - 1]!, {
    value: replacement,
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return value;
}

function deleteAt(value: unknown, path: Path): unknown {
  if (path.length === 0) return undefined;
  const parent = path
    .slice(0, -1)
    .reduce<unknown>((at, key) => (at as Record<string | number, unknown>)[key], value);
  const last = path[path.length - 1]!;
  if (Array.isArray(parent) && typeof last === 'number') parent.splice(last, 1);
  else delete (parent as Record<string | number, unknown>)[last];
  return value;
}

/** A value of another JSON type than `node`'s, of a plausible shape. */
function otherType(node: unknown, pick: number): unknown {
  const options: unknown[] = [
    '1',
    1,
    true,
    null,
    [node],
    { value: node },
    typeof node === 'string' ? Number(node) : String(node),
  ].filter((option) => typeof option !== typeof node || Array.isArray(option) !== Array.isArray(node));
  return options[pick % options.length];
}

const KINDS: readonly { readonly arbitrary: fc.Arbitrary<MutationKind>; readonly weight: number }[] = [
  { arbitrary: fc.constant('valid'), weight: 1 },
  { arbitrary: fc.constant('replace'), weight: 4 },
  { arbitrary: fc.constant('delete'), weight: 2 },
  { arbitrary: fc.constant('extra-field'), weight: 2 },
  { arbitrary: fc.constant('wrong-type'), weight: 3 },
  { arbitrary: fc.constant('wrap'), weight: 1 },
];

/** `valid` values, mutated (about one in thirteen left as they are). */
export function mutated(valid: fc.Arbitrary<unknown>): fc.Arbitrary<Mutated> {
  return fc
    .tuple(valid, fc.oneof(...KINDS), fc.nat(), weirdValue, hostileKey)
    .map(([original, kind, pick, weird, key]) => {
      const value: unknown = structuredClone(original);
      const paths = pathsOf(value);
      const path = paths[pick % paths.length]!;
      const where = path.join('.') || '(root)';
      switch (kind) {
        case 'valid':
          return { value, mutation: 'none' };
        case 'replace':
          return { value: setAt(value, path, weird), mutation: `replace ${where}` };
        case 'delete':
          return { value: deleteAt(value, path), mutation: `delete ${where}` };
        case 'wrong-type': {
          const node = path.reduce<unknown>(
            (at, part) => (at as Record<string | number, unknown>)[part],
            value,
          );
          return { value: setAt(value, path, otherType(node, pick)), mutation: `wrong type at ${where}` };
        }
        case 'wrap':
          return { value: [value, value], mutation: 'wrap in an array' };
        case 'extra-field': {
          const objects = paths.filter((candidate) => {
            const node = candidate.reduce<unknown>(
              (at, part) => (at as Record<string | number, unknown>)[part],
              value,
            );
            return typeof node === 'object' && node !== null && !Array.isArray(node);
          });
          const target = objects[pick % Math.max(objects.length, 1)];
          if (target === undefined)
            return { value: { value, [key]: weird }, mutation: 'wrap with extra field' };
          const node = target.reduce<unknown>(
            (at, part) => (at as Record<string | number, unknown>)[part],
            value,
          );
          setAt(node, [key], weird);
          return { value, mutation: `extra field at ${target.join('.') || '(root)'}` };
        }
      }
      throw new Error(`no mutation of kind ${String(kind)}`);
    });
}
