import { describe, expect, it } from 'vitest';
import {
  IContentsReader,
  IOpeningListing,
  isPirFile,
  looksLikePirJson,
  PIR_HEAD_CHARS,
  PIR_SNIFF_MAX_BYTES,
  routePirOpenings
} from '../src/pirfile';

const PIR = JSON.stringify({ base_code: { magic: 'pir', trainable: false, version: 1 }, program: { regions: [] } });

function reader(files: Record<string, string>, reads: string[] = []): IContentsReader {
  return {
    get: async (path: string) => {
      reads.push(path);
      if (!(path in files)) {
        throw new Error(`no such file: ${path}`);
      }
      return { path, name: path, type: 'file', content: files[path] } as any;
    }
  };
}

describe('telling a PIR program from other JSON', () => {
  it('recognizes the magic Paddle writes, with or without spaces and leading whitespace', () => {
    expect(looksLikePirJson(PIR)).toBe(true);
    expect(looksLikePirJson('\n  {"base_code": {"magic" : "pir", "version": 2}, "program": {}}')).toBe(true);
  });

  it('leaves other JSON alone', () => {
    expect(looksLikePirJson('{"name": "package", "version": "1.0.0"}')).toBe(false);
    expect(looksLikePirJson('{"magic": "nbformat", "note": "pir"}')).toBe(false);
    expect(looksLikePirJson('["magic", "pir"]')).toBe(false);
    expect(looksLikePirJson('[{"magic": "pir"}]')).toBe(false);
    expect(looksLikePirJson('')).toBe(false);
  });

  it('looks only at the head of the file', () => {
    const late = `{"padding": "${'x'.repeat(PIR_HEAD_CHARS)}", "magic": "pir"}`;
    expect(looksLikePirJson(late)).toBe(false);
  });

  it('reads through the contents API, and not a file too big to be a program', async () => {
    const reads: string[] = [];
    const files = { 'm.json': PIR, 'package.json': '{"name": "x"}' };
    expect(await isPirFile(reader(files, reads), 'm.json', PIR.length)).toBe(true);
    expect(await isPirFile(reader(files, reads), 'package.json', 13)).toBe(false);
    expect(await isPirFile(reader(files, reads), 'gone.json')).toBe(false);
    expect(await isPirFile(reader(files, reads), 'm.json', PIR_SNIFF_MAX_BYTES + 1)).toBe(false);
    expect(reads).toEqual(['m.json', 'package.json', 'gone.json']);
  });
});

describe('routing the file browser\'s openings', () => {
  function setup(types: Record<string, string>, pir: Set<string>) {
    const ownOpened: string[] = [];
    const graphs: string[] = [];
    const listing: IOpeningListing = {
      handleOpen(item) {
        ownOpened.push(item.path);
      }
    };
    const restore = routePirOpenings(listing, {
      fileTypeOf: path => types[path] ?? null,
      isPir: async item => pir.has(item.path),
      openAsGraph: path => graphs.push(path)
    });
    return { listing, ownOpened, graphs, restore };
  }

  const item = (path: string, type = 'file') => ({ path, name: path, type }) as any;
  const settle = () => new Promise(resolve => setTimeout(resolve, 0));

  it('opens a PIR .json as a graph and any other .json the listing\'s own way', async () => {
    const { listing, ownOpened, graphs } = setup({ 'm.json': 'json', 'data.json': 'json' }, new Set(['m.json']));
    listing.handleOpen(item('m.json'));
    listing.handleOpen(item('data.json'));
    await settle();
    expect(graphs).toEqual(['m.json']);
    expect(ownOpened).toEqual(['data.json']);
  });

  it('does not read files of other types, nor folders', async () => {
    const { listing, ownOpened, graphs } = setup(
      { 'a.py': 'python', 'run.kctrace.json': 'kernelcore-trace', 'm.json': 'json' },
      new Set(['run.kctrace.json', 'm.json'])
    );
    listing.handleOpen(item('a.py'));
    listing.handleOpen(item('run.kctrace.json'));
    listing.handleOpen(item('m.json', 'directory'));
    await settle();
    expect(graphs).toEqual([]);
    expect(ownOpened).toEqual(['a.py', 'run.kctrace.json', 'm.json']);
  });

  it('can be undone', async () => {
    const { listing, ownOpened, graphs, restore } = setup({ 'm.json': 'json' }, new Set(['m.json']));
    restore();
    listing.handleOpen(item('m.json'));
    await settle();
    expect(graphs).toEqual([]);
    expect(ownOpened).toEqual(['m.json']);
  });
});
