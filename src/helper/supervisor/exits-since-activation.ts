// The exits of an app's process since its last activation, and the reason of the last one:
// state/<app>.exits.json, `{schemaVersion, app, restarts, last: {pid, at, reason?} | null}`
// (docs/design.md §17: status, heartbeats and the dashboard show restarts since activation and the
// last exit's reason). Every activation removes it (a new version, or the old one again, starts
// its count at 0). Why a file of its own: the run record's `lastExit` is read by every steward a
// host may roll back to, whose schema refuses a field it does not know (docs/design.md §16), while
// an older steward never reads this file. Its reason is shown only for the exit the record holds
// (`last.at` is the record's `lastExitAt`).
import { promises as fsp } from 'node:fs';
import { EXIT_REASONS, type ExitReason } from '../../core/exit-reasons.js';
import { appNameSchema, epochMsSchema, intSchema } from '../../core/names.js';
import { stateFile, type HostPaths } from '../../core/paths.js';
import * as z from '../../core/zod-mini.js';
import { writeJsonAtomic } from '../../platform/fs-atomic.js';
import { logger } from '../../platform/log.js';
import { readVersionedJson } from '../../platform/versioned-file.js';

const log = logger('helper:supervisor');

export const EXITS_SCHEMA_VERSION = 1;

const exitsFileSchema = z.strictObject({
  schemaVersion: z.literal(EXITS_SCHEMA_VERSION),
  app: appNameSchema,
  restarts: intSchema(0),
  last: z.nullable(z.strictObject({ pid: intSchema(1), at: epochMsSchema, reason: z.optional(z.enum(EXIT_REASONS)) })),
});
export type ExitsSinceActivation = z.infer<typeof exitsFileSchema>;

function exitsFile(paths: HostPaths, app: string): string {
  // Beside state/<app>.json (whose name checks the app's).
  return stateFile(paths, app).replace(/\.json$/, '.exits.json');
}

// The app's exits since its last activation; null when none was heard (or the file does not read:
// a count is for display, never a reason to refuse anything).
export async function readExits(paths: HostPaths, app: string): Promise<ExitsSinceActivation | null> {
  const r = await readVersionedJson(exitsFile(paths, app), EXITS_SCHEMA_VERSION, exitsFileSchema, 4096).catch((err) => {
    log('WARNING: %s', (err as Error).message);
    return null;
  });
  return r && r.app === app ? r : null;
}

// Counts one exit (durable). Called before the run record that holds the exit when it has a
// reason, so a crash between the two leaves a reason no record matches, never a record whose
// reason was lost; an ordinary exit's count is written after its respawn (off the respawn's path).
export async function countExit(paths: HostPaths, app: string, exit: { pid: number; at: number; reason?: ExitReason | undefined }): Promise<void> {
  const before = await readExits(paths, app);
  const next: ExitsSinceActivation = {
    schemaVersion: EXITS_SCHEMA_VERSION,
    app,
    restarts: Math.min((before?.restarts ?? 0) + 1, Number.MAX_SAFE_INTEGER),
    last: { pid: exit.pid, at: exit.at, ...(exit.reason ? { reason: exit.reason } : {}) },
  };
  await writeJsonAtomic(exitsFile(paths, app), next, 0o600);
}

// The reason of the exit at `lastExitAt` (the record's), or undefined.
export function reasonOf(exits: ExitsSinceActivation | null, lastExitAt: number | null): ExitReason | undefined {
  return exits?.last && lastExitAt !== null && exits.last.at === lastExitAt ? exits.last.reason : undefined;
}

// At an activation: its version's count starts at 0.
export async function removeExits(paths: HostPaths, app: string): Promise<void> {
  await fsp.rm(exitsFile(paths, app), { force: true });
}
