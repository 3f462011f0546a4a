// Names and labels of a sandbox's Kubernetes objects, and the revocation list kept in its
// Secret: pure functions, no API involved.
import { describe, expect, it } from '@jest/globals';
import { labelValue, sandboxResourceName } from '../../../src/providers/kubernetes/kube-names.js';
import { mergeRevocationList } from '../../../src/providers/revocation-file.js';

const DNS_LABEL = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

describe('kubernetes object names', () => {
  it('makes every sandbox id a DNS label of its own, readable where the id allows', () => {
    const ids = ['sb_abc', 'SB_ABC', 'sb-abc', 'a:b.c', '_', 'x'.repeat(200), `${'y'.repeat(199)}Z`];
    const names = ids.map(sandboxResourceName);
    for (const name of names) expect(name).toMatch(DNS_LABEL);
    expect(new Set(names).size).toBe(ids.length);
    expect(sandboxResourceName('sb_abc')).toMatch(/^sbx-sb-abc-[0-9a-f]{10}$/);
    expect(sandboxResourceName('sb_abc')).toBe(sandboxResourceName('sb_abc'));
  });

  it('keeps label values that Kubernetes accepts and hashes the others', () => {
    expect(labelValue('sb_abc.1-2')).toBe('sb_abc.1-2');
    expect(labelValue('a:b')).toMatch(/^h-[0-9a-f]{10}$/);
    expect(labelValue('x'.repeat(64))).toMatch(/^h-[0-9a-f]{10}$/);
    expect(labelValue('a:b')).not.toBe(labelValue('a:c'));
  });
});

describe('revocation list in the Secret', () => {
  it('merges, drops expired entries and never moves not_before back', () => {
    const now = 1_800_000_000_000;
    const first = mergeRevocationList(
      undefined,
      { jtis: [{ jti: 'a', expiresAt: new Date(now + 60_000) }] },
      now,
    );
    const second = mergeRevocationList(
      first,
      { jtis: [{ jti: 'old', expiresAt: new Date(now - 1000) }], notBefore: new Date(now) },
      now,
    );
    expect(JSON.parse(second)).toEqual({ version: 1, not_before: now / 1000, jtis: { a: now / 1000 + 60 } });
    const later = mergeRevocationList(second, { jtis: [], notBefore: new Date(now - 5000) }, now + 120_000);
    expect(JSON.parse(later)).toEqual({ version: 1, not_before: now / 1000, jtis: {} });
  });

  it('refuses to merge into a list it cannot read rather than dropping its entries', () => {
    expect(() => mergeRevocationList('{"version":1,"jtis":', { jtis: [] }, Date.now())).toThrow(/JSON/);
  });
});
