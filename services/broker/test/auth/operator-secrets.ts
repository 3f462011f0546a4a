// Bootstrap secrets as operators' own tools make them, for the config and auth tests.
import { randomBytes, randomInt } from 'node:crypto';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export const OPERATOR_SECRETS: Readonly<Record<string, () => string>> = {
  'openssl rand -hex 32': () => randomBytes(32).toString('hex'),
  'openssl rand -base64 32 (44 characters)': () => randomBytes(32).toString('base64'),
  'a Kubernetes-style random 40-character alphanumeric': () =>
    Array.from({ length: 40 }, () => ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]).join(''),
  'sbk_acc_ and 32 hex digits (sbk_ but not the broker format)': () =>
    `sbk_acc_${randomBytes(16).toString('hex')}`,
};
