import { describe, expect, it } from '@jest/globals';
import { expandScopes, normalizeCapability, parseScopeString, strongestScopes } from '../src/index.js';

describe('capability scopes', () => {
  it('accepts the alias names', () => {
    expect(normalizeCapability('fs_write')).toBe('fs:rw');
    expect(normalizeCapability('exec')).toBe('process');
    expect(normalizeCapability('root')).toBeUndefined();
  });
  it('expands fs:rw to fs:ro and shell to shell:ro', () => {
    expect([...expandScopes(['fs:rw', 'shell'])].toSorted()).toEqual(['fs:ro', 'fs:rw', 'shell', 'shell:ro']);
  });
  it('reports unknown names in a scope string', () => {
    expect(parseScopeString('fs:ro  admin')).toEqual({ scopes: ['fs:ro'], unknown: ['admin'] });
  });
  it('keeps the strongest of scopes that imply each other, in canonical order', () => {
    expect(strongestScopes(['fs:ro', 'fs:rw'])).toEqual(['fs:rw']);
    expect(strongestScopes(['process', 'shell:ro', 'shell', 'fs:ro'])).toEqual(['fs:ro', 'shell', 'process']);
    expect(strongestScopes([])).toEqual([]);
  });
});
