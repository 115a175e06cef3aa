import { formatIssues } from '../../core/config-schema.js';
import { journalFile, type HostPaths } from '../../core/paths.js';
import { JOURNAL_SCHEMA_VERSION, journalSchema, type Journal } from '../../core/journal-schema.js';
import { readFileNoFollow, writeJsonAtomic } from '../../platform/fs-atomic.js';

export type JournalRead = { state: 'absent' } | { state: 'ok'; journal: Journal } | { state: 'invalid'; why: string };

// Reads journal/<app>.json. An unreadable, invalid or future-schema journal is reported as
// invalid (the app is then blocked with JOURNAL_INVALID and the file is left as it is).
export async function readJournal(paths: HostPaths, app: string): Promise<JournalRead> {
  const file = journalFile(paths, app);
  let raw: Buffer | null;
  try {
    raw = await readFileNoFollow(file, 256 * 1024);
  } catch (err) {
    return { state: 'invalid', why: `${file}: ${(err as Error).message}` };
  }
  if (raw === null) return { state: 'absent' };
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return { state: 'invalid', why: `${file}: not valid JSON` };
  }
  const sv = (json as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof sv === 'number' && sv > JOURNAL_SCHEMA_VERSION) {
    return { state: 'invalid', why: `${file}: schemaVersion ${sv} is newer than this steward understands (${JOURNAL_SCHEMA_VERSION})` };
  }
  const parsed = journalSchema.safeParse(json);
  if (!parsed.success) return { state: 'invalid', why: `${file}: ${formatIssues(parsed.error.issues)}` };
  if (parsed.data.app !== app) return { state: 'invalid', why: `${file}: names app ${parsed.data.app}` };
  return { state: 'ok', journal: parsed.data };
}

// Writes the journal with the atomic file replace (0600). Throws on any failure,
// including a failed fsync, which is never retried.
export async function writeJournal(paths: HostPaths, journal: Journal): Promise<void> {
  await writeJsonAtomic(journalFile(paths, journal.app), journalSchema.parse(journal), 0o600);
}
