// The anywidget views: one self-contained ESM file per view (+ its CSS) in
// widgets/kernelcore_widgets/static/. anywidget loads `_esm` from a string, so nothing may be split
// into chunks: the Graphviz WASM (inlined in @viz-js/viz) goes into ProgramGraph.js and Debugger.js.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HERE, REPO } from './version.mjs';

const VIEWS = ['ProgramGraph', 'ScopeForest', 'RNNStepper', 'TraceTimeline', 'Debugger', 'TensorViewer'];
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
