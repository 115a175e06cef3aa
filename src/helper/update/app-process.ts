import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { requireApp } from '../../host/config.js';
import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import { appLogFile, versionDir } from '../../core/paths.js';
import { RELEASE_FILE_NAME, releaseFileSchema, type ReleaseFile } from '../../core/release-schemas.js';
import { readFileNoFollow } from '../../platform/fs-atomic.js';
import { cachedParse, keepParse } from '../../platform/parse-cache.js';
import { logger } from '../../platform/log.js';
import { readRunRecord, writeRunRecord } from '../runners/run-record.js';
import { ensureAppFds, removeAppFds } from '../runners/app-fds.js';
import type { AppTarget, StartedProcess } from '../runners/runner.js';
import type { RunRecord } from '../../core/run-record-schema.js';
import { checkReleaseFile } from '../stage/check-release-file.js';
import type { UpdateContext } from './context.js';
import type { ProbeSpec } from './probe.js';
import { isSameProcessAlive, readProcIdentity, type ProcIdentity } from '../../platform/proc-identity.js';
import { decide, initialSupervisorState, type Observation, type RestartPolicy, type SupervisorRecordState } from '../../core/supervisor-decision.js';

const log = logger('helper:update');

// The release file of a staged version (checked again: it is read as root). The file is read
// on every start; when its text is the one a full check already passed (same tree, same
// runner), that check's answer is reused (parse-cache.ts): a respawn waits on this, and the
// schema check was most of it (issue 8 row 4). A text is kept only when the file read the same
// before and after the check, so the kept answer is the one of those very bytes.
export async function readReleaseOf(ctx: Pick<UpdateContext, 'paths' | 'config'>, app: string, version: string): Promise<ReleaseFile> {
  const appConfig = requireApp(ctx.config, app);
  const tree = versionDir(ctx.paths, app, version);
  const file = path.join(tree, RELEASE_FILE_NAME);
  const key = `${file}\0${appConfig.runner}`;
  const before = await readReleaseText(file);
  const same = before === null ? undefined : cachedParse<ReleaseFile>(releaseFileSchema, key, before);
  if (same !== undefined) return same;
  const rf = await checkReleaseFile(tree, { app, version, appConfig });
  if (before !== null && (await readReleaseText(file)) === before) keepParse(releaseFileSchema, key, before, rf);
  return rf;
}

// The release file's text, or null when it cannot be read (checkReleaseFile then says why).
async function readReleaseText(file: string): Promise<string | null> {
  try {
    return (await readFileNoFollow(file, 64 * 1024))?.toString('utf8') ?? null;
  } catch {
    return null;
  }
}

// The probe of a release: its health block, or "stays up for 5 s" without one. `confirm`
// false leaves out health.confirm (a host that is not enrolled: agent-confirm.ts).
export function probeSpecOf(rf: ReleaseFile, confirm = true): ProbeSpec {
  const h = rf.health;
  if (!h) return { timeoutMs: 0, stableMs: 5000 };
  return {
    ...(h.http ? { http: h.http } : {}),
    ...(h.tcp ? { tcp: h.tcp } : {}),
    ...(h.confirm && confirm ? { confirm: h.confirm } : {}),
    timeoutMs: h.timeoutMs,
    stableMs: h.stableMs,
  };
}

// Why a process is started: only a respawn spends the restart budget; a manual start
// (agentctl start|restart) gives a fresh one (docs/design.md §5).
export type StartCause = 'update' | 'first-pass' | 'respawn' | 'manual';

// The restart policy of a process app.
export function restartPolicyOf(ctx: UpdateContext, app: string): RestartPolicy {
  const cfg = ctx.config.apps[app];
  return cfg?.runner === 'process' ? cfg.restart : { baseMs: 5000, capMs: 300_000, maxAttempts: 5, healthyMs: 600_000 };
}

// The record's supervisor part after an observation.
function observe(ctx: UpdateContext, app: string, sup: SupervisorRecordState | undefined, obs: Observation): SupervisorRecordState {
  const now = ctx.clock.now();
  return decide(sup ?? initialSupervisorState(), obs, restartPolicyOf(ctx, app), now).next;
}

// Starts `version` of the app from its resolved tree and records the process. `supBefore`: the
// supervisor state to observe the start from when the caller holds one not yet written (a
// respawn's exit); else the record's.
export async function startVersion(
  ctx: UpdateContext,
  app: string,
  version: string,
  cause: StartCause = 'update',
  supBefore?: SupervisorRecordState,
): Promise<StartedProcess> {
  const cfg = ctx.config.apps[app];
  if (cfg?.runner === 'unit') return startUnitApp(ctx, app, version, cfg.unit);
  const logFile = appLogFile(ctx.paths, app);
  // Every read here is synchronous local I/O (a respawn waits on them; see the process
  // runner): the release file, the log's size and the account files.
  const rf = await readReleaseOf(ctx, app, version);
  if (!rf.start) throw new StewardError('RELEASE_INVALID', `${app} ${version} has no start command`);
  const logOffset = logSize(logFile);
  const runAs = await ctx.runAs(app);
  const rec = await readRunRecord(ctx.paths, app).catch(() => null);
  const instance = await ensureInstance(ctx, app, version, rec);
  // The readiness and watchdog FIFOs its release asks for (reused from the start before: a
  // respawn makes none), and none it does not.
  const fds = await ensureAppFds(ctx.paths, app, rf.start, runAs?.uid ?? null);
  const proc = await ctx.runner.start({
    app,
    version,
    cwd: versionDir(ctx.paths, app, version),
    command: rf.start.command,
    env: rf.start.env,
    runAs,
    logFile,
    stateDir: path.join(ctx.paths.appStateRoot, app),
    instance,
    ...(fds.ready || fds.watchdog ? { fds } : {}),
    ...(cfg?.runner === 'process' && cfg.memoryMax !== undefined ? { memoryMax: cfg.memoryMax } : {}),
    ...(cfg?.runner === 'process' && cfg.sockets ? { sockets: cfg.sockets } : {}),
  });
  // A version's respawns are its own: the start of another version than the record's (an
  // update, a rollback) counts from 0, never on from the last version's restarts.
  const before = supBefore ?? (rec?.version === version ? rec.supervisor : undefined);
  const at = ctx.clock.now();
  const supervisor = observe(ctx, app, before, cause === 'manual' ? { kind: 'manual-start', at } : { kind: 'started', at, respawn: cause === 'respawn' });
  await writeRunRecord(ctx.paths, {
    schemaVersion: 1,
    app,
    expected: 'running',
    version,
    process: proc.identity,
    startedAt: proc.startedAt,
    logOffset,
    instance,
    supervisor,
  });
  log('started app=%s version=%s pid=%d cause=%s', app, version, proc.identity.pid, cause);
  ctx.onStarted?.(app, proc);
  return proc;
}

// The app's instance token, made and made durable in its record before the first spawn that
// carries it: a crash between a spawn and the record of its process then still leaves the proof
// that the process is the app's. Kept from then on, so a start (a respawn's included) writes
// nothing more before it spawns. The rest of the record is left as it was (or, with no record
// yet, says what is about to run, with no process).
async function ensureInstance(ctx: UpdateContext, app: string, version: string, rec: RunRecord | null): Promise<string> {
  if (rec?.instance) return rec.instance;
  const instance = randomBytes(16).toString('hex');
  const base: RunRecord = rec ?? { schemaVersion: 1, app, expected: 'running', version, process: null, startedAt: null };
  await writeRunRecord(ctx.paths, { ...base, instance });
  return instance;
}

// What the runner may stop of the app (AppTarget): the record's process and instance token,
// and the app's user.
export async function appTarget(ctx: UpdateContext, app: string, rec: RunRecord | null): Promise<AppTarget> {
  const runAs = await ctx.runAs(app);
  return { app, process: rec?.process ?? null, instance: rec?.instance ?? null, uid: runAs?.uid ?? process.getuid?.() ?? -1 };
}

// Where the app's output starts for this process: the log's size now, 0 when there is none.
function logSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

// Stops every process of the app: the recorded one and every other the runner can prove is the
// app's (its instance token, its cgroup or unit; one a crash left unrecorded between a spawn and
// its record included), all within one stop timeout.
// The record says `stopped` before anything is signalled. With `startsNext` (an activation
// that starts a version right after the stop), the record is not written again once the
// processes are gone: the start's record (expected running, the new process) replaces it,
// and until then the `stopped` record names a process that no longer exists, which nothing
// acts on (a record that is not `expected: running` is never adopted, polled or respawned,
// and an identity holds the start time, so a reused pid never matches it).
export async function stopApp(ctx: UpdateContext, app: string, opts: { startsNext?: boolean } = {}): Promise<void> {
  const rec = await readRunRecord(ctx.paths, app).catch(() => null);
  const supervisor = observe(ctx, app, rec?.supervisor, { kind: 'stopped', at: ctx.clock.now() });
  const kept = { ...(rec?.instance ? { instance: rec.instance } : {}), supervisor };
  await writeRunRecord(ctx.paths, {
    schemaVersion: 1,
    app,
    expected: 'stopped',
    version: rec?.version ?? null,
    process: rec?.process ?? null,
    startedAt: rec?.startedAt ?? null,
    ...(rec?.logOffset !== undefined ? { logOffset: rec.logOffset } : {}),
    ...kept,
  });
  const cfg = ctx.config.apps[app];
  if (cfg?.runner === 'unit') {
    // Its unit's own KillMode= and TimeoutStopSec= apply.
    await ctx.units.stop(cfg.unit);
    if (opts.startsNext) return;
    await writeRunRecord(ctx.paths, { schemaVersion: 1, app, expected: 'stopped', version: rec?.version ?? null, process: null, startedAt: null, ...kept });
    return;
  }
  const timeoutMs = cfg?.runner === 'process' ? cfg.stopTimeoutMs : ctx.stopTimeoutMs;
  await ctx.runner.stop(await appTarget(ctx, app, rec), { timeoutMs });
  if (opts.startsNext) return;
  // Nothing of the app runs: its FIFOs go (the next start makes them again).
  removeAppFds(ctx.paths, app);
  await writeRunRecord(ctx.paths, { schemaVersion: 1, app, expected: 'stopped', version: rec?.version ?? null, process: null, startedAt: null, ...kept });
}

// A `unit` app (docs/design.md §5): its unit runs it from `current`, which the transaction already
// points at `version`; starting the unit starts that version. Its identity is the unit's
// MainPID, so the probe's "still alive" is "the same main process": a restart by the unit's
// own Restart= during the probe counts as a death.
async function startUnitApp(ctx: UpdateContext, app: string, version: string, unit: string): Promise<StartedProcess> {
  await ctx.units.start(unit);
  const deadline = ctx.clock.monotonic() + 10_000;
  let st = await ctx.units.status(unit);
  while (st.mainPid === 0 && st.activeState === 'activating' && ctx.clock.monotonic() < deadline) {
    await ctx.clock.sleep(50);
    st = await ctx.units.status(unit);
  }
  const identity = st.mainPid > 0 ? await readProcIdentity(st.mainPid) : null;
  if (!identity) throw new StewardError('RELEASE_INVALID', `${app} ${version}: the unit ${unit} has no main process (${st.activeState}/${st.subState})`);
  const startedAt = ctx.clock.now();
  const prev = await readRunRecord(ctx.paths, app).catch(() => null);
  const kept = prev?.supervisor && prev.version === version ? { supervisor: prev.supervisor } : {};
  await writeRunRecord(ctx.paths, { schemaVersion: 1, app, expected: 'running', version, process: identity, startedAt, ...kept });
  log('started unit app=%s unit=%s version=%s pid=%d', app, unit, version, identity.pid);
  // systemd, not this helper, watches a unit's exits.
  return { identity, startedAt, exited: new Promise(() => {}) };
}

// Whether the recorded process of the app is still the same live process: the runner's
// answer for a process app, the identity alone (pid, start time, boot) for a unit app,
// whose main process lives in its own unit's cgroup.
export async function isAppAlive(ctx: UpdateContext, app: string, identity: ProcIdentity): Promise<boolean> {
  if (ctx.config.apps[app]?.runner === 'unit') return isSameProcessAlive(identity);
  return ctx.runner.isAlive(identity);
}
