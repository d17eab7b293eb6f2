/**
 * A lazy program's skeleton (ProgramJSON version 3) with the group contents fetched so far merged in: what
 * each pane of a program graph builds its model from (kernelcore/view/program_parts.py answers the requests).
 */
import type { BlockJSON, GroupContentsJSON, GroupJSON, ProgramJSON } from './schema';

function idsOf(list: unknown): string[] {
  return Array.isArray(list) ? list.map(x => String(x)) : [];
}

/** A lazy program's skeleton copied so fetched contents can be merged into it (the trait value stays as sent). */
export function mergeable(p: ProgramJSON): ProgramJSON {
  return {
    ...p,
    blocks: p.blocks.map(b => ({
      ...b,
      ops: [...(b.ops ?? [])],
      vars: [...(b.vars ?? [])],
      groups: (b.groups ?? []).map(g => ({ ...g })),
      refs: { ...(b.refs ?? {}) },
      external: [...(b.external ?? [])]
    })),
    // a program in parts gets what pruning removed in parts too: each answer adds to a copy
    pruned: p.pruned
      ? { ...p.pruned, removed_ops: [...idsOf(p.pruned.removed_ops)], removed_vars: [...idsOf(p.pruned.removed_vars)], groups: { ...(p.pruned.groups ?? {}) } }
      : p.pruned
  };
}

/** Add groups the kernel described (not loaded) to block `blk` of a merged skeleton; the ids that were new. */
export function addGroups(blk: BlockJSON, groups: Iterable<GroupJSON>, known: Map<string, GroupJSON>): string[] {
  const fresh: string[] = [];
  for (const gr of groups) {
    if (!gr || typeof gr.id !== 'string' || known.has(gr.id)) {
      continue;
    }
    const copy = { ...gr, loaded: false };
    (blk.groups ??= []).push(copy);
    known.set(copy.id, copy);
    fresh.push(copy.id);
  }
  return fresh;
}

/**
 * Merge one contents answer into a merged skeleton (`known`: its groups by id): the ops and vars added, the
 * groups it describes known, the opened ones loaded, the block's refs / external / edges replaced (they are
 * for the new loaded set). The groups that became known, or null when the answer is for no block here.
 */
export function mergeContents(merged: ProgramJSON, known: Map<string, GroupJSON>, r: GroupContentsJSON): string[] | null {
  const blk = merged.blocks.find(b => b.idx === r?.block) as BlockJSON | undefined;
  if (!blk || !r || !Array.isArray(r.ops) || !Array.isArray(r.vars)) {
    return null;
  }
  for (const o of r.ops) {
    blk.ops.push(o);
  }
  for (const v of r.vars) {
    blk.vars.push(v);
  }
  const fresh = addGroups(blk, Array.isArray(r.known) ? r.known : [], known);
  for (const gid of r.groups ?? []) {
    const gj = gid ? known.get(gid) : undefined;
    if (gj) {
      gj.loaded = true;
    }
  }
  blk.refs = r.refs ?? {};
  blk.external = Array.isArray(r.external) ? r.external : [];
  blk.edges = Array.isArray(r.edges) ? r.edges : [];
  return fresh.filter(id => !(r.groups ?? []).includes(id));
}

/** The loaded groups of block `block` of a merged skeleton (what a contents request says the view has). */
export function loadedOf(merged: ProgramJSON | null, block: number): string[] {
  const blk = merged?.blocks.find(b => b.idx === block);
  return (blk?.groups ?? []).filter(gr => gr.loaded).map(gr => gr.id);
}
