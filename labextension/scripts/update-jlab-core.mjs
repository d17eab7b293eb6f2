// Refresh jlab-core/package.json from an installed JupyterLab's staging/package.json:
//   node scripts/update-jlab-core.mjs "$(python -c 'import jupyterlab, os; print(os.path.dirname(jupyterlab.__file__))')/staging"
// The builder (build-labextension --core-path) reads only name, version, dependencies, resolutions and
// jupyterlab.singletonPackages from it: which packages JupyterLab shares with extensions and at what versions.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HERE } from './version.mjs';

const src = process.argv[2];
if (!src) {
  console.error('usage: node scripts/update-jlab-core.mjs <jupyterlab staging dir>');
  process.exit(2);
}
const d = JSON.parse(readFileSync(join(src, 'package.json'), 'utf8'));
const core = {
  name: d.name,
  version: d.version,
  private: true,
  description: `The parts of JupyterLab ${d.version}'s staging/package.json that @jupyterlab/builder reads (scripts/update-jlab-core.mjs)`,
  dependencies: d.dependencies,
  resolutions: d.resolutions,
  jupyterlab: { singletonPackages: d.jupyterlab.singletonPackages }
};
mkdirSync(join(HERE, 'jlab-core'), { recursive: true });
writeFileSync(join(HERE, 'jlab-core', 'package.json'), JSON.stringify(core, null, 2) + '\n');
console.log(`jlab-core/package.json from JupyterLab ${d.version}`);
