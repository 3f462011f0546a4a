// The sandbox namespace's NetworkPolicies, asked the operator's questions through an evaluator
// of NetworkPolicy semantics: who reaches an agent, and where each kind of sandbox may go.
import { describe, expect, it } from '@jest/globals';
import { canConnect, ingressAdmits, type Pod } from './network-policy.js';
import { builds } from './workloads.js';

const SANDBOXES = 'sbx-sandboxes';
const sandbox = (network: 'on' | 'off', ip: string): Pod => ({
  namespace: SANDBOXES,
  ip,
  labels: {
    'sbx.dev/managed-by': 'sbx-broker',
    'sbx.dev/sandbox-id': `sbx-${ip.replaceAll('.', '-')}`,
    'sbx.dev/tenant-id': 'tenant-1',
    'sbx.dev/network': network,
  },
});
const broker: Pod = {
  namespace: 'sbx-system',
  ip: '10.244.0.10',
  labels: { 'app.kubernetes.io/name': 'sbx-broker' },
};
const ingressController: Pod = {
  namespace: 'ingress-nginx',
  ip: '10.244.0.20',
  labels: { 'app.kubernetes.io/name': 'ingress-nginx' },
};
const postgres: Pod = {
  namespace: 'sbx-system',
  ip: '10.244.0.30',
  labels: { 'app.kubernetes.io/name': 'postgres' },
};
const otherApp: Pod = {
  namespace: 'default',
  ip: '10.244.0.40',
  labels: { 'app.kubernetes.io/name': 'sbx-broker' },
};
const kubeDns: Pod = { namespace: 'kube-system', ip: '10.96.0.10', labels: { 'k8s-app': 'kube-dns' } };
const unlabelled: Pod = { namespace: SANDBOXES, ip: '10.244.2.9', labels: { app: 'stray' } };

const AGENT = { port: 8080 };
const HTTPS = { port: 443 };
const DNS = { port: 53, protocol: 'UDP' } as const;
const internet = { ip: '93.184.216.34' };
const internetV6 = { ip: '2606:2800:220:1:248:1893:25c8:1946' };
const apiServer = { ip: '10.96.0.1' };
const metadataService = { ip: '169.254.169.254' };
const nodeAddress = { ip: '192.168.49.2' };

describe.each(builds().map((build) => [build.name, build.objects] as const))(
  'network policies of the %s build',
  (_name, objects) => {
    const on = sandbox('on', '10.244.1.5');
    const off = sandbox('off', '10.244.1.6');

    it('let the broker and the ingress controller reach an agent on its port', () => {
      for (const agent of [on, off]) {
        expect(canConnect(objects, broker, agent, AGENT)).toBe(true);
        expect(canConnect(objects, ingressController, agent, AGENT)).toBe(true);
      }
    });

    it('keep everyone else from agents: other sandboxes, other pods of the broker namespace, other namespaces', () => {
      expect(canConnect(objects, on, off, AGENT)).toBe(false);
      expect(canConnect(objects, off, on, AGENT)).toBe(false);
      expect(canConnect(objects, postgres, on, AGENT)).toBe(false);
      expect(canConnect(objects, otherApp, on, AGENT)).toBe(false); // broker's label, wrong namespace
      expect(canConnect(objects, broker, on, { port: 3000 })).toBe(false); // a user's server is not exposed
      // Each side holds on its own: an agent refuses a neighbour even if that one's egress were open.
      expect(ingressAdmits(objects, off, on, AGENT)).toBe(false);
      expect(ingressAdmits(objects, on, postgres, AGENT)).toBe(false);
    });

    it('give an internal-only sandbox no egress at all, not even DNS', () => {
      for (const target of [internet, internetV6, apiServer, metadataService, nodeAddress])
        expect([target.ip, canConnect(objects, off, target, HTTPS)]).toEqual([target.ip, false]);
      expect(canConnect(objects, off, kubeDns, DNS)).toBe(false);
      expect(canConnect(objects, off, broker, AGENT)).toBe(false);
    });

    it('let a network-on sandbox resolve names and reach the internet, but not the cluster or the cloud', () => {
      expect(canConnect(objects, on, kubeDns, DNS)).toBe(true);
      expect(canConnect(objects, on, kubeDns, { port: 53, protocol: 'TCP' })).toBe(true);
      expect(canConnect(objects, on, internet, HTTPS)).toBe(true);
      expect(canConnect(objects, on, internetV6, HTTPS)).toBe(true);
      for (const target of [apiServer, metadataService, nodeAddress, broker, postgres])
        expect([target.ip, canConnect(objects, on, target, HTTPS)]).toEqual([target.ip, false]);
      expect(canConnect(objects, on, kubeDns, { port: 80 })).toBe(false);
    });

    it('shut a pod the broker did not label: no ingress, no egress', () => {
      expect(canConnect(objects, broker, unlabelled, AGENT)).toBe(false);
      expect(canConnect(objects, unlabelled, internet, HTTPS)).toBe(false);
      expect(canConnect(objects, unlabelled, kubeDns, DNS)).toBe(false);
    });
  },
);
