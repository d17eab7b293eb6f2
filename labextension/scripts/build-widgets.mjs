// The anywidget views: one self-contained ESM file per view (+ its CSS) in
// widgets/kernelcore_widgets/static/. anywidget loads `_esm` from a string, so nothing may be split
// into chunks. Graphviz (@viz-js/viz, its WASM inlined) is NOT in them: it is the layout worker
// kc-layout-worker.js, one classic script written here and into the prebuilt JupyterLab extension's
// static/ folder, which the server serves; every view on a page shares one worker (src/layout.ts).
import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HERE, REPO } from './version.mjs';

const VIEWS = ['ProgramGraph', 'ScopeForest', 'RNNStepper', 'TraceTimeline', 'Debugger', 'TensorViewer', 'HealthView'];
const out = join(REPO, 'widgets', 'kernelcore_widgets', 'static');
mkdirSync(out, { recursive: true });
const version = JSON.parse(readFileSync(join(HERE, 'package.json'), 'utf8')).version;

const t0 = Date.now();
await build({
  entryPoints: Object.fromEntries(VIEWS.map(v => [v, join(HERE, 'src', 'views', `${v}.ts`)])),
  outdir: out,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2021'],
  minify: true,
  sourcemap: false,
  legalComments: 'eof',
  banner: { js: `/* kernelcore ${version} view; built from labextension/src/views */` },
  logLevel: 'warning'
});
const worker = await build({
  entryPoints: [join(HERE, 'src', 'layoutworker.ts')],
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: ['es2021'],
  minify: true,
  write: false,
  legalComments: 'eof',
  banner: { js: `/* kernelcore ${version} Graphviz layout worker; built from labextension/src/layoutworker.ts */` },
  logLevel: 'warning'
});
const labStatic = join(REPO, 'widgets', 'kernelcore_widgets', 'labextension', 'static');
mkdirSync(labStatic, { recursive: true });
writeFileSync(join(labStatic, 'kc-layout-worker.js'), worker.outputFiles[0].contents);
const css = await build({
  entryPoints: [join(HERE, 'style', 'base.css')],
  bundle: true,
  minify: true,
  write: false,
  logLevel: 'warning'
});
const cssText = css.outputFiles[0].text;
for (const v of VIEWS) {
  writeFileSync(join(out, `${v}.css`), cssText);
}
console.log(`widget views -> ${out} (${VIEWS.join(', ')}) in ${Date.now() - t0} ms`);
