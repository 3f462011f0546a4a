// Reading deploy/k8s for the tests: every YAML file parsed as multi-document YAML, and the
// kustomization tree walked (resources, components, patches) the way kustomize reads it.
// `kubectl kustomize`, where installed, renders the overlays for real (renderOverlay).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const K8S_DIR = path.join(ROOT, 'deploy', 'k8s');
export const OVERLAYS = ['dev', 'production'] as const;

/** The fields of Kubernetes objects the tests read; everything else stays unknown. */
export interface K8sObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
  };
  readonly [field: string]: unknown;
}

export interface Kustomization {
  readonly kind?: string;
  readonly resources?: string[];
  readonly components?: string[];
  readonly patches?: { path?: string; patch?: string }[];
  readonly images?: { name: string; newName?: string; newTag?: string }[];
}

/** Every document of a YAML file; a parse error fails the test that reads it. */
export function readYamlDocuments(file: string): unknown[] {
  const documents = parseAllDocuments(readFileSync(file, 'utf8'));
  const list = Array.isArray(documents) ? documents : [documents];
  return list.flatMap((document) => {
    if (document.errors.length > 0) throw new Error(`${file}: ${document.errors[0]?.message}`);
    const value: unknown = document.toJS();
    return value === null || value === undefined ? [] : [value];
  });
}

export function readObjects(file: string): K8sObject[] {
  return readYamlDocuments(file).map((value) => {
    const object = value as K8sObject;
    if (typeof object.kind !== 'string' || typeof object.metadata?.name !== 'string')
      throw new Error(`${file}: a document without kind or metadata.name`);
    return object;
  });
}

export function readKustomization(dir: string): Kustomization {
  const [value] = readYamlDocuments(path.join(dir, 'kustomization.yaml'));
  return value as Kustomization;
}

/** Every .yaml/.yml file under a directory, recursively. */
export function yamlFilesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return yamlFilesUnder(file);
    return /\.ya?ml$/.test(name) ? [file] : [];
  });
}

export interface KustomizeTree {
  /** Kustomization directories reached, the starting one first. */
  readonly dirs: string[];
  /** Files listed as resources (objects of the build). */
  readonly resourceFiles: string[];
  /** Files listed as patches. */
  readonly patchFiles: string[];
  /** Listed entries that do not exist. */
  readonly missing: string[];
}

/** Walks resources and components from a kustomization directory, as kustomize does. */
export function walkKustomization(start: string): KustomizeTree {
  const tree: KustomizeTree = { dirs: [], resourceFiles: [], patchFiles: [], missing: [] };
  const visit = (dir: string): void => {
    if (tree.dirs.includes(dir)) return;
    tree.dirs.push(dir);
    const kustomization = readKustomization(dir);
    for (const entry of [...(kustomization.resources ?? []), ...(kustomization.components ?? [])]) {
      const target = path.resolve(dir, entry);
      if (!existsSync(target)) tree.missing.push(target);
      else if (statSync(target).isDirectory()) visit(target);
      else tree.resourceFiles.push(target);
    }
    for (const patch of kustomization.patches ?? []) {
      if (patch.path === undefined) continue;
      const target = path.resolve(dir, patch.path);
      (existsSync(target) ? tree.patchFiles : tree.missing).push(target);
    }
  };
  visit(path.resolve(start));
  return tree;
}

/** The objects a kustomization lists (patches not applied: see renderOverlay). */
export function objectsOf(start: string): K8sObject[] {
  return walkKustomization(start).resourceFiles.flatMap(readObjects);
}

export function byKind(objects: readonly K8sObject[], kind: string): K8sObject[] {
  return objects.filter((object) => object.kind === kind);
}

export function named(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name}`);
  return found;
}

/** `kubectl kustomize <dir>` parsed, or undefined when kubectl is not installed. */
export function renderOverlay(dir: string): K8sObject[] | undefined {
  const probe = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) return undefined;
  const rendered = spawnSync('kubectl', ['kustomize', dir], {
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (rendered.status !== 0) throw new Error(`kubectl kustomize ${dir}: ${rendered.stderr}`);
  const values: unknown[] = parseAllDocuments(rendered.stdout).map((document): unknown => document.toJS());
  return values.filter((value) => value !== null) as K8sObject[];
}
