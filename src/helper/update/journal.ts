import { journalFile, type HostPaths } from '../../core/paths.js';
import { JOURNAL_SCHEMA_VERSION, journalSchema, type Journal } from '../../core/journal-schema.js';
import { writeJsonAtomic } from '../../platform/fs-atomic.js';
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
export async function writeJournal(paths: HostPaths, journal: Journal): Promise<void> {
  await writeJsonAtomic(journalFile(paths, journal.app), journalSchema.parse(journal), 0o600);
}
