// What a backup or a copy takes from a store: every table of its snapshot, its sequences, and
// the kept tarball of every release whose row says it keeps one, read from the artifacts folder
// and checked against the release's size and integrity (a backup whose rollouts would point at
// missing or other bytes is no backup). A tarball missing or changed fails the whole dump.
import { constants as fsc, promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { StewardError } from '../../core/errors.js';
import { artifactPath } from '../catalog/artifact-path.js';
import type { StoreSnapshot } from '../store/bulk.js';
import type { DumpEvent } from './backup-format.js';
import { checkedBytes } from './checked-bytes.js';

// How often a long table reports its progress, in rows.
const PROGRESS_ROWS = 50_000;

// Says how the work goes, one line at a time (the CLI prints it on stderr).
export type Progress = (line: string) => void;

// Counts a table's rows as they go by, saying so every PROGRESS_ROWS and at the end (the total).
export function rowCounter(table: string, progress: Progress): { add(n: number): void; end(): number } {
  let rows = 0;
  let reported = 0;
  return {
    add(n) {
      rows += n;
      if (rows - reported < PROGRESS_ROWS) return;
      progress(`${table}: ${rows} rows so far`);
      reported = rows;
    },
    end() {
      progress(`${table}: ${rows} rows`);
      return rows;
    },
  };
}

// The events of `snapshot`, the tarballs read from `artifactsDir`.
export async function* dumpStore(snapshot: StoreSnapshot, artifactsDir: string, progress: Progress): AsyncGenerator<DumpEvent> {
  for (const table of await snapshot.tables()) {
    yield { kind: 'table', table };
    const count = rowCounter(table.name, progress);
    for await (const batch of snapshot.rows(table)) {
      yield { kind: 'rows', rows: batch };
      count.add(batch.length);
    }
    yield { kind: 'tableEnd', table: table.name, rows: count.end() };
  }
  for (const mark of await snapshot.sequences()) yield { kind: 'sequence', mark };
  for (const r of await snapshot.releases()) {
    if (r.artifactPath === null) continue;
    const file = artifactPath(artifactsDir, r.app, r.version);
    const what = `the kept tarball of ${r.app} ${r.version} (${file})`;
    let fh: FileHandle;
    try {
      // Why O_NOFOLLOW: as the server, never read a tarball through a symlink.
      fh = await fsp.open(file, fsc.O_RDONLY | fsc.O_NOFOLLOW);
    } catch (err) {
      throw new StewardError('NOT_FOUND', `cannot read ${what}: ${(err as Error).message}; its release keeps a tarball, and a backup without it would not restore its rollouts (is --artifacts the folder serve uses?)`, { cause: err });
    }
    try {
      const bytes = checkedBytes(chunksOf(fh), r, (reason) => new StewardError('INTEGRITY_MISMATCH', `${what} holds ${reason}: it is not the release's tarball (changed on disk?)`));
      yield { kind: 'artifact', artifact: { app: r.app, version: r.version, size: r.size, integrity: r.integrity }, bytes };
    } finally {
      await fh.close();
    }
    progress(`tarball ${r.app} ${r.version}: ${r.size} bytes`);
  }
}

// The file's bytes from its start, 256 KiB at a time (the handle stays the caller's to close).
async function* chunksOf(fh: FileHandle): AsyncGenerator<Buffer> {
  for (;;) {
    const buf = Buffer.alloc(256 * 1024);
    const { bytesRead } = await fh.read(buf, 0, buf.length, null);
    if (bytesRead === 0) return;
    yield buf.subarray(0, bytesRead);
  }
}
