// state/<app>.hold.json, `{schemaVersion, app, expiry: {by, reason, at, until} | null, lifted}`:
// the expiry of an app's hold and the record of the last hold lifted (docs/design.md §18). Why a
// file of its own: the hold itself stays in state/<app>.json as `{by, reason, at}`, which every
// steward a host may roll back to reads with a schema that refuses a field it does not know
// (docs/design.md §16), while an older steward never reads this file. An older helper therefore
// sees a hold with an expiry as one without: it holds on until release-hold, never less.
// The expiry applies only to the hold it names (the same by, reason and at): a hold put after it
// (a stop, a rollback) is one without an expiry, and a file that does not read is none.
import type { HoldLift, HoldView } from '../../core/hold-limits.js';
import { appNameSchema, epochMsSchema } from '../../core/names.js';
import { stateFile, type HostPaths } from '../../core/paths.js';
import type { AppState } from '../../core/state-schemas.js';
import * as z from '../../core/zod-mini.js';
import { ioStep, noFaults, type Faults } from '../../platform/faults.js';
import { writeJsonAtomic } from '../../platform/fs-atomic.js';
import { logger } from '../../platform/log.js';
import { readVersionedJson } from '../../platform/versioned-file.js';

const log = logger('helper:hold');

export const HOLD_FILE_SCHEMA_VERSION = 1;

const textSchema = (max: number) => z.string().check(z.maxLength(max));
const holdOfFile = { by: textSchema(256), reason: textSchema(512), at: epochMsSchema };

export const holdFileSchema = z.strictObject({
  schemaVersion: z.literal(HOLD_FILE_SCHEMA_VERSION),
  app: appNameSchema,
  expiry: z.nullable(z.strictObject({ ...holdOfFile, until: epochMsSchema })),
  lifted: z.nullable(
    z.strictObject({
      ...holdOfFile,
      until: z.nullable(epochMsSchema),
      liftedAt: epochMsSchema,
      how: z.enum(['expired', 'released']),
      releasedBy: z.optional(textSchema(256)),
    }),
  ),
});
export type HoldFile = z.infer<typeof holdFileSchema>;

// Beside state/<app>.json (whose name checks the app's).
export function holdFile(paths: HostPaths, app: string): string {
  return stateFile(paths, app).replace(/\.json$/, '.hold.json');
}

// The app's hold file; null when there is none or it does not read (logged): then no hold of the
// app has an expiry, which holds longer, never shorter.
export async function readHoldFile(paths: HostPaths, app: string): Promise<HoldFile | null> {
  const r = await readVersionedJson(holdFile(paths, app), HOLD_FILE_SCHEMA_VERSION, holdFileSchema, 16 * 1024).catch((err) => {
    log('WARNING: %s (holds of %s have no expiry until it is rewritten)', (err as Error).message, app);
    return null;
  });
  return r && r.app === app ? r : null;
}

// Writes the hold file (atomic, fsync'd, 0600).
export async function writeHoldFile(paths: HostPaths, file: HoldFile, faults: Faults = noFaults): Promise<void> {
  await writeJsonAtomic(holdFile(paths, file.app), file, 0o600, ioStep(faults, 'state'));
}

// The file with `change` applied to the one on disk (or to none).
export function nextHoldFile(app: string, before: HoldFile | null, change: Partial<Pick<HoldFile, 'expiry' | 'lifted'>>): HoldFile {
  return { schemaVersion: HOLD_FILE_SCHEMA_VERSION, app, expiry: before?.expiry ?? null, lifted: before?.lifted ?? null, ...change };
}

// The hold as shown: state/<app>.json's hold with the expiry that names it, else until null.
export function holdViewOf(hold: AppState['hold'], file: HoldFile | null): HoldView | null {
  if (!hold) return null;
  const e = file?.expiry;
  const same = e && e.by === hold.by && e.reason === hold.reason && e.at === hold.at;
  return { by: hold.by, reason: hold.reason, at: hold.at, until: same ? e.until : null };
}

// The record of the last hold lifted, as shown.
export function liftOf(file: HoldFile | null): HoldLift | null {
  return file?.lifted ?? null;
}
