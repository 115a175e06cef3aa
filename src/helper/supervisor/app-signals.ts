// An app's signal counters since the activation of its current release (docs/design.md §19):
// state/<app>.signals.json, `{schemaVersion, app, since, livenessFailures, watchdogKills, oomKills}`.
// Every activation writes it afresh (`since` = that activation); an app without one (a host from
// before §19, or a file that does not read) counts from the helper's start. Restarts are the exits
// file's (exits-since-activation.ts), reset at the same activations. Why a file of its own: the exits
// file's schema is strict and read by every steward a host may roll back to (docs/design.md §16).
// OOM kills are the runner's exit reason OOM, which it reads from the app cgroup's memory.events
// `oom_kill` where it made one, else from systemd's result or the kernel log (src/helper/runners/);
// watchdog kills are exits with reason WATCHDOG; liveness failures are failed checks, each one.
import { appNameSchema, epochMsSchema, intSchema } from '../../core/names.js';
import { stateFile, type HostPaths } from '../../core/paths.js';
import * as z from '../../core/zod-mini.js';
import { writeJsonAtomic } from '../../platform/fs-atomic.js';
import { logger } from '../../platform/log.js';
import { readVersionedJson } from '../../platform/versioned-file.js';

const log = logger('helper:supervisor');

export const SIGNALS_SCHEMA_VERSION = 1;
const MAX_COUNT = 1_000_000_000;

const signalsFileSchema = z.strictObject({
  schemaVersion: z.literal(SIGNALS_SCHEMA_VERSION),
  app: appNameSchema,
  since: epochMsSchema,
  livenessFailures: intSchema(0),
  watchdogKills: intSchema(0),
  oomKills: intSchema(0),
});
export type SignalCounts = z.infer<typeof signalsFileSchema>;
export type SignalCounter = 'livenessFailures' | 'watchdogKills' | 'oomKills';

function signalsFile(paths: HostPaths, app: string): string {
  return stateFile(paths, app).replace(/\.json$/, '.signals.json');
}

// One write at a time per app file: the supervisor's exits and the liveness checks count concurrently.
const queues = new Map<string, Promise<unknown>>();
function serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const run = (queues.get(key) ?? Promise.resolve()).then(fn, fn);
  const settled = run.catch(() => undefined);
  queues.set(key, settled);
  void settled.then(() => {
    if (queues.get(key) === settled) queues.delete(key);
  });
  return run;
}

// The app's counts, or null when none were written (or the file does not read: counts are for
// display and analysis, never a reason to refuse anything).
export async function readSignalCounts(paths: HostPaths, app: string): Promise<SignalCounts | null> {
  const r = await readVersionedJson(signalsFile(paths, app), SIGNALS_SCHEMA_VERSION, signalsFileSchema, 4096).catch((err) => {
    log('WARNING: %s', (err as Error).message);
    return null;
  });
  return r && r.app === app ? r : null;
}

// Adds one to `counter` (durable). An app with no file starts one at `fallbackSince` (the helper's start).
export function countSignal(paths: HostPaths, app: string, counter: SignalCounter, fallbackSince: number): Promise<void> {
  return serialized(signalsFile(paths, app), async () => {
    const before = (await readSignalCounts(paths, app)) ?? emptyCounts(app, fallbackSince);
    await writeJsonAtomic(signalsFile(paths, app), { ...before, [counter]: Math.min(before[counter] + 1, MAX_COUNT) }, 0o600);
  });
}

// At an activation: every count starts at 0, since `now`.
export function resetSignalCounts(paths: HostPaths, app: string, now: number): Promise<void> {
  return serialized(signalsFile(paths, app), () => writeJsonAtomic(signalsFile(paths, app), emptyCounts(app, now), 0o600));
}

function emptyCounts(app: string, since: number): SignalCounts {
  return { schemaVersion: SIGNALS_SCHEMA_VERSION, app, since, livenessFailures: 0, watchdogKills: 0, oomKills: 0 };
}
