// Jest runs TypeScript ESM through @swc/jest (TypeScript 7 has no JS API for
// ts-jest) and needs --experimental-vm-modules for PGlite's dynamic imports.
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: [
    '<rootDir>/packages',
    '<rootDir>/services',
    '<rootDir>/scripts',
    '<rootDir>/deploy',
    '<rootDir>/reliability',
  ],
  // reliability/: the bounded fault, load and fuzz suites (reliability/README.md); their long
  // forms run with SBX_RELIABILITY=long through scripts/run-reliability.mjs.
  testMatch: ['**/test/**/*.test.ts', '<rootDir>/reliability/**/*.test.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'es6' },
      },
    ],
  },
  // Ceilings, not expectations: hooks and tests that start brokers, agents and databases must
  // pass on a 2-core machine also running another CI (load average 6–8), where a broker
  // started through tsx took more than the former 30 s.
  testTimeout: 120_000,
  // Two workers on this machine's two cores, each replaced once it holds more than 1 GiB
  // after a test file: run in band, one process accumulated every file's modules (5.9 GB
  // resident two thirds through) and the suite slowed down as its heap grew.
  maxWorkers: 2,
  workerIdleMemoryLimit: '1GB',
};
