// deploy/k8s as a kustomize tree: every file a kustomization names exists, every manifest is
// named by some kustomization (no orphan an operator would think is applied), every document
// parses, patches hit objects that exist, and each overlay renders to what it says it is.
import { describe, expect, it } from '@jest/globals';
import path from 'node:path';
import {
  K8S_DIR,
  OVERLAYS,
  byKind,
  named,
  readObjects,
  readYamlDocuments,
  walkKustomization,
  yamlFilesUnder,
  type K8sObject,
} from './manifests.js';
import { builds, podSpecOf } from './workloads.js';

const ENTRY_POINTS = ['base', ...OVERLAYS.map((overlay) => path.join('overlays', overlay))].map((dir) =>
  path.join(K8S_DIR, dir),
);
const trees = ENTRY_POINTS.map((dir) => walkKustomization(dir));
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
]);

const identity = (object: K8sObject): string =>
  `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;

describe('the kustomize tree under deploy/k8s', () => {
  it('lists only files and directories that exist', () => {
    expect(trees.flatMap((tree) => tree.missing)).toEqual([]);
  });

  it('lists every manifest somewhere (as a resource or a patch)', () => {
    const listed = new Set(trees.flatMap((tree) => [...tree.resourceFiles, ...tree.patchFiles]));
    const manifests = yamlFilesUnder(K8S_DIR).filter((file) => path.basename(file) !== 'kustomization.yaml');
    expect(manifests.filter((file) => !listed.has(file)).map((file) => path.relative(K8S_DIR, file))).toEqual(
      [],
    );
    expect(manifests.length).toBeGreaterThan(10);
  });

  it('reaches every kustomization directory from base or an overlay', () => {
    const reached = new Set(trees.flatMap((tree) => tree.dirs));
    const kustomizations = yamlFilesUnder(K8S_DIR)
      .filter((file) => path.basename(file) === 'kustomization.yaml')
      .map((file) => path.dirname(file));
    expect(kustomizations.filter((dir) => !reached.has(dir))).toEqual([]);
  });

  it('parses every document, each with apiVersion, kind, a name and (when namespaced) a namespace', () => {
    const files = yamlFilesUnder(K8S_DIR);
    const kustomizations = files.filter((file) => path.basename(file) === 'kustomization.yaml');
    expect(kustomizations.map((file) => readYamlDocuments(file).length)).toEqual(kustomizations.map(() => 1));
    const objects = files.filter((file) => !kustomizations.includes(file)).flatMap(readObjects);
    expect(objects.filter((object) => !/^[\w.]*\/?v\d\w*$/.test(object.apiVersion)).map(identity)).toEqual(
      [],
    );
    // No global `namespace:` in the kustomizations: each namespaced object says where it lives.
    const unplaced = objects.filter(
      (object) => !CLUSTER_SCOPED.has(object.kind) && !(object.metadata.namespace ?? '').startsWith('sbx-'),
    );
    expect(unplaced.map(identity)).toEqual([]);
  });

  it('patches objects that the same build lists', () => {
    for (const tree of trees) {
      const listed = new Set(tree.resourceFiles.flatMap(readObjects).map(identity));
      for (const patch of tree.patchFiles.flatMap(readObjects)) expect(listed).toContain(identity(patch));
    }
  });

  it('holds no Secret: secrets are created in the cluster, never committed', () => {
    for (const tree of trees) expect(byKind(tree.resourceFiles.flatMap(readObjects), 'Secret')).toEqual([]);
  });
});

describe('the builds', () => {
  const all = builds();
  const renderedOnly = all.filter((build) => build.rendered);
  const imageOf = (objects: readonly K8sObject[]): string | undefined =>
    podSpecOf(named(objects, 'Deployment', 'sbx-broker')).containers[0]?.image;
  const configOf = (objects: readonly K8sObject[]): Record<string, string> =>
    (named(objects, 'ConfigMap', 'sbx-broker-config') as K8sObject & { data: Record<string, string> }).data;

  it('render with kubectl kustomize where kubectl is installed, each object once', () => {
    // Without kubectl the structural tests above still hold; the output says what was not rendered.
    if (renderedOnly.length === 0) process.stderr.write('kubectl not installed: overlays not rendered\n');
    const summary = renderedOnly.map((build) => {
      const ids = build.objects.map(identity);
      return {
        build: build.name,
        many: ids.length > 10,
        duplicates: ids.filter((id, i) => ids.indexOf(id) !== i),
      };
    });
    expect(summary).toEqual(renderedOnly.map((build) => ({ build: build.name, many: true, duplicates: [] })));
  });

  const production = renderedOnly.find((build) => build.name === 'production');
  const dev = renderedOnly.find((build) => build.name === 'dev');
  it('production: released images (not latest), agent-sandbox mode, more brokers', () => {
    const objects = production?.objects;
    if (objects === undefined) return; // not rendered without kubectl
    expect(imageOf(objects)).toMatch(/:\d+\.\d+\.\d+$/);
    expect(configOf(objects)['SANDBOX_IMAGE']).toMatch(/:\d+\.\d+\.\d+$/);
    expect(configOf(objects)['K8S_MODE']).toBe('agent-sandbox');
    expect(configOf(objects)['BROKER_PUBLIC_URL']).toMatch(/^https:/);
    const deployment = named(objects, 'Deployment', 'sbx-broker') as K8sObject & {
      spec: { replicas: number };
    };
    expect(deployment.spec.replicas).toBeGreaterThan(2);
  });
  it('dev: pods mode, locally loaded images, its own Postgres and Redis', () => {
    const objects = dev?.objects;
    if (objects === undefined) return; // not rendered without kubectl
    expect(configOf(objects)['K8S_MODE']).toBe('pods');
    expect(imageOf(objects)).toBe('sbx-broker:dev');
    expect(podSpecOf(named(objects, 'Deployment', 'sbx-broker')).containers[0]).toMatchObject({
      imagePullPolicy: 'Never',
    });
    expect(named(objects, 'Service', 'postgres')).toBeDefined();
    expect(named(objects, 'Service', 'redis')).toBeDefined();
  });
});
