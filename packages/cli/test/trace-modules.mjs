// `node --import <this>`: appends the URL of every module the process loads (ES modules,
// including node: built-ins) to the file named by SBX_TEST_MODULE_LOG, one a line. Used by
// cli-bundle.test.ts to see what `sbx` runs; does nothing without the variable.
import { register } from 'node:module';

const HOOKS = `
import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function load(url, context, next) {
  appendFileSync(log, url + '\\n');
  return next(url, context);
}
`;

const log = process.env.SBX_TEST_MODULE_LOG;
if (log !== undefined && log !== '') {
  register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, { data: { log } });
}
