import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs helper
import { packageVersion, pythonVersion, toSemver } from '../scripts/version.mjs';
import { VIEW_NAMES } from '../src/schema';

describe('package', () => {
  it('has the Python package version (one source of truth: kernelcore/__init__.py)', () => {
    expect(packageVersion()).toBe(toSemver(pythonVersion()));
    expect(toSemver('0.2.0a1')).toBe('0.2.0-alpha.1');
    expect(toSemver('1.0.0rc2')).toBe('1.0.0-rc.2');
    expect(toSemver('1.0.0.dev3')).toBe('1.0.0-dev.3');
  });

  it('names the JupyterLab entry points and output dir the Python package ships', () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8'));
    expect(pkg.name).toBe('@kernelcore/labextension');
    expect(pkg.jupyterlab.extension).toBe('lib/index.js');
    expect(pkg.jupyterlab.mimeExtension).toBe('lib/mime.js');
    expect(pkg.jupyterlab.outputDir).toBe('../widgets/kernelcore_widgets/labextension');
    expect(pkg.devDependencies.typescript).toMatch(/^~5\./);
  });

  it('every view module default-exports { render } and no named render (anywidget warns about those)', async () => {
    for (const name of VIEW_NAMES) {
      const mod = await import(`../src/views/${name}.ts`);
      expect(typeof mod.default.render).toBe('function');
      expect(mod.render).toBeUndefined();
      expect(mod.initialize).toBeUndefined();
    }
  });
});
