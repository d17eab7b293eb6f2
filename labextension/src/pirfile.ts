/**
 * Paddle 3's PIR programs are `.json` files, and JupyterLab's document registry picks a file's default
 * viewer by its name alone. So kernelcore's graph viewer is offered for every `.json` ("Open With >
 * Kernelcore Graph") but is the default for none; opening a `.json` from the file browser reads its head
 * through the contents API first and draws it as a graph only where the content says `"magic": "pir"`.
 * Every other JSON file opens as before.
 */
import type { Contents } from '@jupyterlab/services';

export const PIR_FACTORY = 'Kernelcore Graph';

/** The JSON file type of JupyterLab's document registry, whose opening is routed by content. */
export const JSON_FILE_TYPE = 'json';

/** How far into a file its "magic" is looked for: Paddle writes `base_code` first. */
export const PIR_HEAD_CHARS = 4096;

/**
 * Files bigger than this are not read to be recognized (the contents API reads whole files): they open
 * with JupyterLab's default for JSON, and "Open With > Kernelcore Graph" still draws them.
 */
export const PIR_SNIFF_MAX_BYTES = 32 * 1024 * 1024;

const PIR_MAGIC = /"magic"\s*:\s*"pir"/;

/** Whether a file's text starts like a PIR program: a JSON object whose head names magic "pir". */
export function looksLikePirJson(text: string): boolean {
  const head = text.slice(0, PIR_HEAD_CHARS + 64).trimStart().slice(0, PIR_HEAD_CHARS);
  return head.startsWith('{') && PIR_MAGIC.test(head);
}

/** The part of the contents service the check reads through. */
export interface IContentsReader {
  get(path: string, options?: Contents.IFetchOptions): Promise<Contents.IModel>;
}

/**
 * Whether the file at `path` is a PIR program, read through the contents API. A file over
 * PIR_SNIFF_MAX_BYTES, or one that cannot be read, is not recognized: it opens the default way,
 * whose viewer reports what is wrong with it.
 */
export async function isPirFile(contents: IContentsReader, path: string, size?: number | null): Promise<boolean> {
  if (typeof size === 'number' && size > PIR_SNIFF_MAX_BYTES) {
    return false;
  }
  try {
    const model = await contents.get(path, { type: 'file', format: 'text', content: true });
    return typeof model.content === 'string' && looksLikePirJson(model.content);
  } catch {
    return false;
  }
}

/** The file browser's listing, as far as opening an item goes (DirListing.handleOpen). */
export interface IOpeningListing {
  handleOpen(item: Contents.IModel): void;
}

export interface IPirRouting {
  /** The name of the registry's default file type for a path (e.g. "json"), or null. */
  fileTypeOf(path: string): string | null;
  /** Reads the file to tell whether it is a PIR program. */
  isPir(item: Contents.IModel): Promise<boolean>;
  /** Opens the file with kernelcore's graph viewer. */
  openAsGraph(path: string): void;
}

/**
 * Routes the file browser's openings (double-click, Enter) of `.json` files by content: a PIR program
 * opens with kernelcore's graph viewer, anything else goes on to the listing's own opening. Other files
 * and folders are untouched. Returns a function that puts the listing's own opening back.
 */
export function routePirOpenings(listing: IOpeningListing, routing: IPirRouting): () => void {
  const own = listing.handleOpen;
  const openByContent = (item: Contents.IModel): void => {
    if (item.type !== 'file' || routing.fileTypeOf(item.path) !== JSON_FILE_TYPE) {
      own.call(listing, item);
      return;
    }
    void routing.isPir(item).then(pir => {
      if (pir) {
        routing.openAsGraph(item.path);
      } else {
        own.call(listing, item);
      }
    });
  };
  listing.handleOpen = openByContent;
  return () => {
    if (listing.handleOpen === openByContent) {
      listing.handleOpen = own;
    }
  };
}
