// Durable commits for the server's connection without blocking its one thread on the fsync.
//
// With synchronous=FULL, SQLite fsyncs the WAL inside every COMMIT, and better-sqlite3 is
// synchronous: the event loop stood still for each fsync (bench/README.md, round 13), so no heartbeat could be
// read or verified meanwhile, and under an open-loop load each commit held only the one or two
// heartbeats whose bodies had arrived. Here the server's connection commits with
// synchronous=NORMAL, which in WAL mode is FULL minus exactly that per-commit fsync of the WAL
// (the WAL header is still synced when the WAL restarts, checkpoints still sync both files), and
// the fsync is done by us, in libuv's thread pool, before anything is answered:
//
//   durable() resolves once an fdatasync of the WAL that started after the call has returned.
//
// Every write of this process goes through the one connection on the one thread, so such an
// fdatasync covers every commit made before durable() was called. One fdatasync runs at a
// time; the callers that arrive while it runs share the next one (group commit of the fsync).
// Other processes (the CLI) open the store with FULL and are not affected.
//
// A failed fdatasync is never retried (docs/design.md §2): after a failure the kernel may have dropped
// the dirty pages, so a later "successful" fsync would prove nothing. Every caller then and from
// then on gets the error; steward-control must be restarted, and SQLite recovers from the WAL as
// it is on disk.
import { promises as fsp } from 'node:fs';
import { StewardError } from '../../../core/errors.js';
import { logger } from '../../../platform/log.js';
import type Database from 'better-sqlite3';

const log = logger('control:store');

export interface CommitSync {
  // Resolves once every commit made before this call is on disk; rejects when that fsync failed
  // (or one failed before).
  durable(): Promise<void>;
  // fsyncs started so far.
  syncs(): number;
  // Closes the WAL's file handle (after the last durable()).
  close(): Promise<void>;
}

// What the syncer needs of a SQLite store: its one connection and its file.
export interface SqliteConnection {
  db: Database.Database;
  file: string;
}

// The WAL of the store's main database file (SQLite's default VFS names it so).
export function walFileOf(store: SqliteConnection): string {
  return `${store.file}-wal`;
}

// Switches the store's connection to synchronous=NORMAL and returns the syncer that every
// answer depending on a write must wait for. `sync` is a test seam (default: fdatasync the WAL).
export function createCommitSync(store: SqliteConnection, opts: { sync?: () => Promise<void> } = {}): CommitSync {
  // The WAL is opened once, at the first fsync (a commit has made it by then), and held: while
  // this connection is open SQLite keeps writing that same file (it truncates it, never replaces
  // it), and each fsync is then one thread-pool round trip, not three (open, fdatasync, close).
  // An open that fails fails that fsync and, like any failed fsync, every one after it.
  let wal: Promise<fsp.FileHandle> | null = null;
  const sync = opts.sync ?? (async () => {
    wal ??= fsp.open(walFileOf(store), 'r');
    await (await wal).datasync();
  });
  store.db.pragma('synchronous = NORMAL');
  let waiting: Array<{ resolve: () => void; reject: (err: unknown) => void }> = [];
  let running = false;
  let failure: StewardError | null = null;
  let count = 0;

  const start = () => {
    const mine = waiting;
    waiting = [];
    running = true;
    count++;
    sync().then(
      () => {
        for (const w of mine) w.resolve();
      },
      (err: unknown) => {
        failure = new StewardError('IO_ERROR', `fsync of the control plane database's WAL failed (${(err as Error)?.message ?? String(err)}); nothing is answered until steward-control is restarted`, { cause: err });
        log('%s', failure.message);
        for (const w of mine) w.reject(failure);
        for (const w of waiting.splice(0)) w.reject(failure);
      },
    ).finally(() => {
      running = false;
      if (waiting.length > 0) start();
    });
  };

  return {
    durable() {
      if (failure) return Promise.reject(failure);
      return new Promise<void>((resolve, reject) => {
        waiting.push({ resolve, reject });
        if (!running) start();
      });
    },
    syncs: () => count,
    close: async () => {
      const fh = await wal?.catch(() => null);
      wal = null;
      await fh?.close();
    },
  };
}
