import { formatIssues } from '../../core/config-schema.js';
import { StewardError } from '../../core/errors.js';
import { supervisorFile, type HostPaths } from '../../core/paths.js';
import { RUN_RECORD_SCHEMA_VERSION, runRecordSchema, type RunRecord } from '../../core/run-record-schema.js';
import { readFileNoFollow, writeJsonAtomic } from '../../platform/fs-atomic.js';

// Reads supervisor/<app>.json; null when absent. Invalid or newer files are refused.
export async function readRunRecord(paths: HostPaths, app: string): Promise<RunRecord | null> {
  const file = supervisorFile(paths, app);
  let raw: Buffer | null;
  try {
    raw = await readFileNoFollow(file, 64 * 1024);
  } catch (err) {
    throw new StewardError('STATE_INVALID', `${file}: ${(err as Error).message}`, { cause: err });
  }
  if (raw === null) return null;
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new StewardError('STATE_INVALID', `${file}: not valid JSON`);
  }
  const sv = (json as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof sv === 'number' && sv > RUN_RECORD_SCHEMA_VERSION) {
    throw new StewardError('STATE_INVALID', `${file}: schemaVersion ${sv} is newer than this steward understands`);
  }
  const parsed = runRecordSchema.safeParse(json);
  if (!parsed.success) throw new StewardError('STATE_INVALID', `${file}: ${formatIssues(parsed.error.issues)}`);
  return parsed.data;
}

// Writes supervisor/<app>.json with the atomic file replace (0600).
export async function writeRunRecord(paths: HostPaths, record: RunRecord): Promise<void> {
  await writeJsonAtomic(supervisorFile(paths, record.app), runRecordSchema.parse(record), 0o600);
}
