// Jest runs TypeScript ESM through @swc/jest (TypeScript 7 has no JS API for
// ts-jest) and needs --experimental-vm-modules for PGlite's dynamic imports.
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/packages', '<rootDir>/services', '<rootDir>/scripts', '<rootDir>/deploy'],
  testMatch: ['**/test/**/*.test.ts'],
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
  testTimeout: 30000,
};
