// The prebuilt JupyterLab extension, via @jupyterlab/builder's build-labextension (what
// `jupyter labextension build` runs), into ../widgets/kernelcore_widgets/labextension (package.json
// jupyterlab.outputDir). The "core" (JupyterLab's shared-package versions) is jlab-core/, a trimmed copy
// of JupyterLab's staging/package.json, so no Python is needed; JUPYTERLAB_CORE_PATH overrides it.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { HERE } from './version.mjs';

const require = createRequire(import.meta.url);
const core = process.env.JUPYTERLAB_CORE_PATH || join(HERE, 'jlab-core');
const builder = join(require.resolve('@jupyterlab/builder/package.json'), '..', 'lib', 'build-labextension.js');
const dev = process.argv.includes('--development');
const args = [builder, '--core-path', core, ...(dev ? ['--development'] : []), HERE];
const t0 = Date.now();
const r = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: HERE });
if (r.status !== 0) {
  process.exit(r.status ?? 1);
}
console.log(`labextension built (${dev ? 'development' : 'production'}, core ${core}) in ${Date.now() - t0} ms`);
