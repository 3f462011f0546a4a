// Types of test-resource-names.mjs (the runner imports it as plain JavaScript).
export declare const TEST_NAME_PREFIX: 'sbx_test_';
export declare const LEGACY_REDIS_PREFIX: 'sbxtest-';
export declare const RUN_ENV: 'SBX_TEST_RUN';
export declare const STALE_AFTER_MS: number;

export interface ParsedTestResourceName {
  readonly createdMs: number;
  readonly run: string;
}

export declare function isRunId(run: unknown): run is string;
export declare function newRunId(): string;
export declare function currentRunId(env?: Readonly<Record<string, string | undefined>>): string;
export declare function testResourceName(run?: string, now?: number): string;
export declare function parseTestResourceName(name: string): ParsedTestResourceName | undefined;
