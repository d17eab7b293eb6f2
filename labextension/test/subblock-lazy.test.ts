import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProgramGraphModel } from '../src/graph';
import type { GroupContentsJSON, ProgramJSON } from '../src/schema';

/** An MLP of 60 layers (block 0: ranges of layers) and a StaticRNN whose step (block 1) reads layer 10's
 * output, sent in parts; the answers to opening block 1's group and then each group of block 0 around that
 * variable, outermost first (tests/make_frontend_fixtures.py, from kernelcore.program_parts). */
const FIX: { skeleton: ProgramJSON; whole: ProgramJSON; name: string; chain: string[]; replies: GroupContentsJSON[] } =
  JSON.parse(readFileSync(join(__dirname, 'data', 'subblock_lazy.json'), 'utf8'));

/** What the view does with an answer for block r.block: ops and vars added, groups known (folded), the
 * opened ones loaded, that block's refs/external/edges replaced. */
function merged(p: ProgramJSON, r: GroupContentsJSON): ProgramJSON {
  const q: ProgramJSON = JSON.parse(JSON.stringify(p));
  const b = q.blocks.find(x => x.idx === r.block)!;
  b.ops.push(...r.ops);
  b.vars.push(...r.vars);
  for (const g of r.known) {
    if (!b.groups!.some(x => x.id === g.id)) {
      b.groups!.push({ ...g, loaded: false });
    }
  }
  b.groups!.forEach(g => r.groups.includes(g.id) && (g.loaded = true));
  Object.assign(b, { refs: r.refs, external: r.external, edges: r.edges });
  return q;
}

/** The drawn edges touching op `opId`, by program id (ops/vars) or group id. */
function edgesOf(g: ProgramGraphModel, folded: Set<string>, opId: string): string[] {
  const idOf = new Map<string, string>();
  g.nodes.forEach(n => idOf.set(n.key, n.id));
  g.clusters.forEach((_c, cid) => idOf.set(g.collapsedKey(cid), cid));
  const out: string[] = [];
  for (const line of g.toDot(folded, 'p_').split('\n')) {
    const m = /^\s+(\S+) -> (\S+) \[/.exec(line);
    const [a, z] = m ? [idOf.get(m[1]) ?? m[1], idOf.get(m[2]) ?? m[2]] : ['', ''];
    if (a === opId || z === opId) {
      out.push(`${a} > ${z}`);
    }
  }
  return out.sort();
}

describe('a sub-block of a lazy program', () => {
  it("keeps its op's edge to a variable of the enclosing block while that block's groups open", () => {
    const whole = new ProgramGraphModel(FIX.whole);
    const reader = FIX.whole.blocks[1].ops.find(o => Object.values(o.inputs ?? {}).some(v => v.includes(FIX.name)))!;
    const readerId = String(reader.id);
    // the whole program draws block 1 inside the group of the op that runs it: open those there (the
    // parts draw it at top level until that op is fetched)
    const ownerGroups: string[] = [];
    for (let c = whole.clusters.get('cluster_1')!.parent; c; c = whole.clusters.get(c)!.parent) {
      ownerGroups.push(c);
    }
    const [step, ...opens] = FIX.replies;
    const open: string[] = [step.groups[0] as string];
    let p = merged(FIX.skeleton, step);
    // each step: block 1's group open, then the groups of block 0 around the variable, outermost first
    for (let k = 0; k <= opens.length; k++) {
      const lazy = new ProgramGraphModel(p);
      const folded = new Set([...lazy.clusters.keys()].filter(id => !open.includes(id) && lazy.clusters.get(id)!.kind === 'group'));
      const wholeFolded = new Set([...whole.clusters.keys()].filter(id => !open.includes(id) && !ownerGroups.includes(id) && whole.clusters.get(id)!.kind === 'group'));
      const drawn = edgesOf(lazy, folded, readerId);
      expect(drawn).toEqual(edgesOf(whole, wholeFolded, readerId));
      // the edge from the variable: from the innermost group of the chain still folded, then the variable
      const from = k < FIX.chain.length ? FIX.chain[k] : `v0:${FIX.name}`;
      expect(drawn).toContain(`${from} > ${readerId}`);
      if (k < opens.length) {
        p = merged(p, opens[k]);
        open.push(opens[k].groups[0] as string);
      }
    }
  });
});
