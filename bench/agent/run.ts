import { report } from '../lib/measure.js';
import { benchTokenVerify } from './token-verify.js';

const verdicts = [...benchTokenVerify()];
process.exitCode = report('agent', verdicts) ? 0 : 1;
