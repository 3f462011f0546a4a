// `pnpm --filter ./services/broker new-api-key`: prints one new API key in
// the broker's own format (sbk_<12 hex>_<43 base64url>), for BROKER_BOOTSTRAP_API_KEY
// or a secret store. Nothing is stored and no configuration is read, so it runs
// anywhere; only the key goes to stdout, so `KEY=$(…)` captures exactly it.
import { generateApiKey } from './store/api-key-repository.js';

process.stdout.write(`${generateApiKey().key}\n`);
