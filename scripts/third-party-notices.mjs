// The licenses of the third-party packages inside a bundle, for a bundle that is published
// (@sbx/cli's dist/THIRD-PARTY-NOTICES.txt): their MIT, ISC and BSD licenses ask that each
// copy of the code keeps its copyright and permission notice.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './esbuild-kit.mjs';

const LICENSE_FILE = /^(licen[cs]e|copying)(\.(md|txt))?$/i;

/** `node_modules/…/node_modules/<name or @scope/name>`: the directory of the package a bundled file comes from. */
function packageDirOf(input) {
  const parts = input.split('/');
  const at = parts.lastIndexOf('node_modules');
  if (at < 0) return undefined;
  const length = parts[at + 1]?.startsWith('@') ? 3 : 2;
  return path.join(REPO_ROOT, ...parts.slice(0, at + length));
}

/** One text: each package (name@version, license) and its license file, sorted by name. */
export function thirdPartyNotices(bundleInputs) {
  const dirs = [...new Set(bundleInputs.map(packageDirOf).filter((dir) => dir !== undefined))];
  const packages = dirs
    .filter((dir) => existsSync(path.join(dir, 'package.json')))
    .map((dir) => {
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      const file = readdirSync(dir).find((name) => LICENSE_FILE.test(name));
      const text =
        file === undefined
          ? `(no license file; package.json says ${manifest.license})`
          : readFileSync(path.join(dir, file), 'utf8').trim();
      return { id: `${manifest.name}@${manifest.version}`, license: manifest.license ?? 'unknown', text };
    })
    .sort((a, b) => a.id.localeCompare(b.id));
  const header = 'The `sbx` bundle contains code of these packages, under these licenses.\n';
  return [header, ...packages.map((p) => `${'='.repeat(72)}\n${p.id} (${p.license})\n\n${p.text}\n`)].join(
    '\n',
  );
}
