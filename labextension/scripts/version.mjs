// The one version: kernelcore/__init__.py's __version__ (hatch reads it too). package.json must match.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = dirname(dirname(fileURLToPath(import.meta.url))); // labextension/
export const REPO = dirname(HERE);

export function pythonVersion() {
  const text = readFileSync(join(REPO, 'kernelcore', '__init__.py'), 'utf8');
  const m = /^__version__\s*=\s*["']([^"']+)["']/m.exec(text);
  if (!m) {
    throw new Error('kernelcore/__init__.py has no __version__ = "..." line');
  }
  return m[1];
}

/** PEP 440 -> npm semver for the common forms: 0.1.0, 0.2.0a1 -> 0.2.0-alpha.1, 1.0.0rc2 -> 1.0.0-rc.2, .devN -> -dev.N */
export function toSemver(v) {
  const m = /^(\d+\.\d+\.\d+)(?:(a|b|rc)(\d+))?(?:\.dev(\d+))?$/.exec(v);
  if (!m) {
    throw new Error(`cannot map Python version ${v} to semver`);
  }
  const pre = { a: 'alpha', b: 'beta', rc: 'rc' }[m[2]];
  let out = m[1];
  if (pre) out += `-${pre}.${m[3]}`;
  if (m[4] !== undefined) out += `${pre ? '.' : '-'}dev.${m[4]}`;
  return out;
}

export function packageVersion() {
  return JSON.parse(readFileSync(join(HERE, 'package.json'), 'utf8')).version;
}
