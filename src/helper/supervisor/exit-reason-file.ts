// The reason of an app's last exit, beside its run record: state/<app>.exit.json. Why a file of
// its own: the run record's `lastExit` is read by every steward a host may roll back to, whose
// schema refuses a field it does not know (docs/design.md §16), while an older steward never
// reads this file. It is matched to the record by the exit's time: a reason whose `at` is not
// the record's `lastExitAt` belongs to an exit before, and is not shown.
import { promises as fsp } from 'node:fs';
import { EXIT_REASONS, type ExitReason } from '../../core/exit-reasons.js';
import { appNameSchema, epochMsSchema, intSchema } from '../../core/names.js';
import { stateFile, type HostPaths } from '../../core/paths.js';
import * as z from '../../core/zod-mini.js';
import { writeJsonAtomic } from '../../platform/fs-atomic.js';
import { readVersionedJson } from '../../platform/versioned-file.js';

export const EXIT_REASON_SCHEMA_VERSION = 1;

const exitReasonFileSchema = z.strictObject({
  schemaVersion: z.literal(EXIT_REASON_SCHEMA_VERSION),
  app: appNameSchema,
  pid: intSchema(1),
  at: epochMsSchema,
  reason: z.enum(EXIT_REASONS),
});
export type ExitReasonRecord = z.infer<typeof exitReasonFileSchema>;

function exitReasonFile(paths: HostPaths, app: string): string {
  return stateFile(paths, app).replace(/\.json$/, '.exit.json');
}

// Written (durable) before the record that holds the exit, so a crash between the two leaves a
// reason no record matches, never a record whose reason was lost.
export async function writeExitReason(paths: HostPaths, rec: ExitReasonRecord): Promise<void> {
  await writeJsonAtomic(exitReasonFile(paths, rec.app), rec, 0o600);
}

// The reason of the exit at `lastExitAt`, or undefined (none written, another exit's, unreadable).
export async function readExitReason(paths: HostPaths, app: string, lastExitAt: number | null): Promise<ExitReason | undefined> {
  if (lastExitAt === null) return undefined;
  const r = await readVersionedJson(exitReasonFile(paths, app), EXIT_REASON_SCHEMA_VERSION, exitReasonFileSchema, 4096).catch(() => null);
  return r && r.app === app && r.at === lastExitAt ? r.reason : undefined;
}

export async function removeExitReason(paths: HostPaths, app: string): Promise<void> {
  await fsp.rm(exitReasonFile(paths, app), { force: true });
}
