// Remove what `npm run build` makes.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { HERE, REPO } from './version.mjs';

for (const p of [
  join(HERE, 'lib'),
  join(HERE, 'tsconfig.tsbuildinfo'),
  join(REPO, 'widgets', 'kernelcore_widgets', 'static'),
  join(REPO, 'widgets', 'kernelcore_widgets', 'labextension')
]) {
  rmSync(p, { recursive: true, force: true });
  console.log(`removed ${p}`);
}
