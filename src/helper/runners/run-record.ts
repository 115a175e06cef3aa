import { mustParse } from '../../core/must-parse.js';
import { supervisorFile, type HostPaths } from '../../core/paths.js';
import { RUN_RECORD_SCHEMA_VERSION, runRecordSchema, type RunRecord } from '../../core/run-record-schema.js';
import { writeJsonAtomic } from '../../platform/fs-atomic.js';
import { readVersionedJson } from '../../platform/versioned-file.js';

// Reads supervisor/<app>.json; null when absent. Invalid or newer files are refused.
export async function readRunRecord(paths: HostPaths, app: string): Promise<RunRecord | null> {
  return readVersionedJson(supervisorFile(paths, app), RUN_RECORD_SCHEMA_VERSION, runRecordSchema, 64 * 1024, true);
}

// Writes supervisor/<app>.json with the atomic file replace (0600).
export async function writeRunRecord(paths: HostPaths, record: RunRecord): Promise<void> {
  await writeJsonAtomic(supervisorFile(paths, record.app), mustParse(runRecordSchema, record, 'INTERNAL', 'run record'), 0o600);
}
