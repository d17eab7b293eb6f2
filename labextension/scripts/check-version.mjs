// Fails when package.json's version is not kernelcore.__version__; `--fix` rewrites package.json.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HERE, packageVersion, pythonVersion, toSemver } from './version.mjs';

const want = toSemver(pythonVersion());
const have = packageVersion();
if (want === have) {
  console.log(`version ${have} (kernelcore/__init__.py and package.json agree)`);
} else if (process.argv.includes('--fix')) {
  const path = join(HERE, 'package.json');
  const text = readFileSync(path, 'utf8').replace(/"version":\s*"[^"]*"/, `"version": "${want}"`);
  writeFileSync(path, text);
  console.log(`package.json version ${have} -> ${want}`);
} else {
  console.error(`package.json has version ${have} but kernelcore/__init__.py says ${want}: run \`npm run check-version -- --fix\``);
  process.exit(1);
}
