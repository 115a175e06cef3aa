import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { mustParse } from '../../core/must-parse.js';
import { journalFile, type HostPaths } from '../../core/paths.js';
import { JOURNAL_SCHEMA_VERSION, journalSchema, type Journal } from '../../core/journal-schema.js';
import { fsyncDir, prepareJsonAtomic, writeJsonAtomic, type PreparedFile } from '../../platform/fs-atomic.js';
import { ioStep, noFaults, type Faults } from '../../platform/faults.js';
import { readVersionedJson } from '../../platform/versioned-file.js';

export type JournalRead = { state: 'absent' } | { state: 'ok'; journal: Journal } | { state: 'invalid'; why: string };

// Reads journal/<app>.json. An unreadable, invalid or future-schema journal is reported as
// invalid (the app is then blocked with JOURNAL_INVALID and the file is left as it is).
export async function readJournal(paths: HostPaths, app: string): Promise<JournalRead> {
  const file = journalFile(paths, app);
  let journal: Journal | null;
  try {
    journal = await readVersionedJson(file, JOURNAL_SCHEMA_VERSION, journalSchema, 256 * 1024);
  } catch (err) {
    return { state: 'invalid', why: (err as Error).message };
  }
  if (journal === null) return { state: 'absent' };
  if (journal.app !== app) return { state: 'invalid', why: `${file}: names app ${journal.app}` };
  return { state: 'ok', journal };
}

// Writes the journal with the atomic file replace (0600). Throws on any failure,
// including a failed fsync, which is never retried.
export async function writeJournal(paths: HostPaths, journal: Journal, faults: Faults = noFaults): Promise<void> {
  await writeJsonAtomic(journalFile(paths, journal.app), mustParse(journalSchema, journal, 'INTERNAL', 'journal'), 0o600, ioStep(faults, 'journal'));
}

// The first half of writeJournal (see prepareFileAtomic): the journal is not changed until commit().
export async function prepareJournal(paths: HostPaths, journal: Journal, faults: Faults = noFaults): Promise<PreparedFile> {
  return prepareJsonAtomic(journalFile(paths, journal.app), mustParse(journalSchema, journal, 'INTERNAL', 'journal'), 0o600, ioStep(faults, 'journal'));
}

// Removes journal/<app>.json durably (the undo of a first `activating` journal whose write
// failed after its rename).
export async function removeJournal(paths: HostPaths, app: string): Promise<void> {
  const file = journalFile(paths, app);
  await fsp.rm(file, { force: true });
  await fsyncDir(path.dirname(file));
}

// Makes the journal as it reads now durable: its data, then its name in the folder.
export async function syncJournal(paths: HostPaths, app: string): Promise<void> {
  const file = journalFile(paths, app);
  const fh = await fsp.open(file, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fsyncDir(path.dirname(file));
}
