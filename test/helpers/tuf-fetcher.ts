// A tuf-js fetcher serving a TufRepo's files from memory (test/helpers/tuf-repo.ts), and an
// Updater over it whose only trusted root is the repository's first one.
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { BaseFetcher, Updater } from 'tuf-js';
// tuf-js does not export its errors from the package's index; the Updater stops walking root
// versions only on this error with a 404 (there is no exports map, so the file is reachable).
import { DownloadHTTPError } from 'tuf-js/dist/error.js';
import type { TufRepo } from './tuf-repo.js';
import { scratchDir } from './scratch.js';

export const METADATA_URL = 'https://tuf.test/metadata';

export class MemoryFetcher extends BaseFetcher {
  readonly asked: string[] = [];
  constructor(private readonly files: ReadonlyMap<string, Buffer>) {
    super();
  }
  override async fetch(url: string): Promise<ReadableStream<Uint8Array<ArrayBuffer>>> {
    this.asked.push(url);
    const name = decodeURIComponent(url.slice(url.lastIndexOf('/') + 1));
    const bytes = url.startsWith(METADATA_URL + '/') ? this.files.get(name) : undefined;
    if (!bytes) throw new DownloadHTTPError(`${url}: not found`, 404);
    const copy = new Uint8Array(bytes);
    return new ReadableStream<Uint8Array<ArrayBuffer>>({
      start(c) {
        c.enqueue(copy);
        c.close();
      },
    });
  }
}

// An Updater that trusts `repo`'s 1.root.json (copied into a fresh metadata folder), as a host
// does after install.
export function updaterFor(repo: TufRepo): { updater: Updater; metadataDir: string; fetcher: MemoryFetcher } {
  const metadataDir = path.join(scratchDir('steward-tuf-client-'), 'metadata');
  mkdirSync(metadataDir);
  copyFileSync(path.join(repo.dir, '1.root.json'), path.join(metadataDir, 'root.json'));
  const fetcher = new MemoryFetcher(repo.files);
  return { updater: new Updater({ metadataDir, metadataBaseUrl: METADATA_URL, fetcher }), metadataDir, fetcher };
}
