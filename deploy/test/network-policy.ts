// A small evaluator of Kubernetes NetworkPolicy semantics, for asking the deploy manifests
// "may this pod reach that one?" the way a conforming CNI plugin answers: a pod selected by
// no policy of a direction is open in it; a selected pod may do what any rule of any
// selecting policy allows (policies add up). Only matchLabels selectors are supported; a
// policy using matchExpressions makes the evaluator throw rather than guess.
import { BlockList, isIPv4 } from 'node:net';
import type { K8sObject } from './manifests.js';

type Labels = Readonly<Record<string, string>>;

interface Selector {
  matchLabels?: Labels;
  matchExpressions?: unknown[];
}

interface Peer {
  podSelector?: Selector;
  namespaceSelector?: Selector;
  ipBlock?: { cidr: string; except?: string[] };
}

interface Rule {
  from?: Peer[];
  to?: Peer[];
  ports?: { port?: number | string; protocol?: string }[];
}

interface NetworkPolicy extends K8sObject {
  spec: { podSelector: Selector; policyTypes?: string[]; ingress?: Rule[]; egress?: Rule[] };
}

export interface Pod {
  readonly namespace: string;
  readonly labels: Labels;
  readonly ip: string;
}

/** Where a connection goes: a pod, or an address outside the cluster. */
export type Endpoint = Pod | { readonly ip: string };

export interface Connection {
  readonly port: number;
  readonly protocol?: 'TCP' | 'UDP';
}

function matches(selector: Selector | undefined, labels: Labels): boolean {
  if (selector?.matchExpressions !== undefined) throw new Error('matchExpressions are not evaluated here');
  return Object.entries(selector?.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
}

/** Namespaces carry their own name as a label (Kubernetes sets it on every namespace). */
const namespaceLabels = (namespace: string): Labels => ({ 'kubernetes.io/metadata.name': namespace });

function inBlock(ip: string, block: NonNullable<Peer['ipBlock']>): boolean {
  const subnet = (cidr: string): BlockList => {
    const [address = '', prefix = ''] = cidr.split('/');
    const list = new BlockList();
    list.addSubnet(address, Number(prefix), isIPv4(address) ? 'ipv4' : 'ipv6');
    return list;
  };
  const family = isIPv4(ip) ? 'ipv4' : 'ipv6';
  const [blockAddress = ''] = block.cidr.split('/');
  if ((isIPv4(blockAddress) ? 'ipv4' : 'ipv6') !== family) return false;
  return subnet(block.cidr).check(ip, family) && !(block.except ?? []).some((cidr) => inBlock(ip, { cidr }));
}

function peerMatches(peer: Peer, policyNamespace: string, endpoint: Endpoint): boolean {
  if (peer.ipBlock !== undefined) return inBlock(endpoint.ip, peer.ipBlock);
  if (!('namespace' in endpoint)) return false;
  const namespaceOk =
    peer.namespaceSelector === undefined
      ? endpoint.namespace === policyNamespace
      : matches(peer.namespaceSelector, namespaceLabels(endpoint.namespace));
  return namespaceOk && matches(peer.podSelector, endpoint.labels);
}

function portMatches(rule: Rule, connection: Connection): boolean {
  if (rule.ports === undefined || rule.ports.length === 0) return true;
  return rule.ports.some(
    (port) =>
      (port.port === undefined || Number(port.port) === connection.port) &&
      (port.protocol ?? 'TCP') === (connection.protocol ?? 'TCP'),
  );
}

function policiesOf(objects: readonly K8sObject[]): NetworkPolicy[] {
  return objects.filter((object): object is NetworkPolicy => object.kind === 'NetworkPolicy');
}

function allowed(
  objects: readonly K8sObject[],
  direction: 'Ingress' | 'Egress',
  subject: Pod,
  other: Endpoint,
  connection: Connection,
): boolean {
  const selecting = policiesOf(objects).filter(
    (policy) =>
      policy.metadata.namespace === subject.namespace &&
      matches(policy.spec.podSelector, subject.labels) &&
      (policy.spec.policyTypes ?? ['Ingress']).includes(direction),
  );
  if (selecting.length === 0) return true;
  return selecting.some((policy) =>
    ((direction === 'Ingress' ? policy.spec.ingress : policy.spec.egress) ?? []).some((rule) => {
      const peers = direction === 'Ingress' ? rule.from : rule.to;
      const peerOk =
        peers === undefined ||
        peers.length === 0 ||
        peers.some((peer) => peerMatches(peer, policy.metadata.namespace ?? '', other));
      return peerOk && portMatches(rule, connection);
    }),
  );
}

/** The receiver's side alone: do the policies selecting `to` admit `from`? */
export function ingressAdmits(
  objects: readonly K8sObject[],
  to: Pod,
  from: Endpoint,
  connection: Connection,
): boolean {
  return allowed(objects, 'Ingress', to, from, connection);
}

/** May `from` open `connection` to `to`? Both the sender's egress and the receiver's ingress must allow it. */
export function canConnect(
  objects: readonly K8sObject[],
  from: Endpoint,
  to: Endpoint,
  connection: Connection,
): boolean {
  const egressOk = !('namespace' in from) || allowed(objects, 'Egress', from, to, connection);
  const ingressOk = !('namespace' in to) || allowed(objects, 'Ingress', to, from, connection);
  return egressOk && ingressOk;
}
