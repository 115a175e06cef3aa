import { readExits, reasonOf } from '../supervisor/exits-since-activation.js';
import { signalsOf, type UsageReader } from './status-signals.js';
import { processTreeReader } from '../supervisor/process-usage.js';
import { isOpen, readWatch } from '../update/watch-window.js';
import type { ExitReason } from '../../core/exit-reasons.js';
import type { Journal } from '../../core/journal-schema.js';
import type { HostConfig } from '../../core/config-schema.js';
import { quarantineInForce } from '../../core/quarantine.js';
import { requireApp } from '../../host/config.js';
import type { HostPaths } from '../../core/paths.js';
import type { AppStatus, LastTransfer, RunningWork, StatusResult, TrustStatus } from '../../protocol/answers.js';
import { readTrustState } from '../trust/trust-store.js';
import { holdViewOf, liftOf, readHoldFile } from '../holds/hold-file.js';
import { readAppState } from '../state/app-state.js';
import { readCurrent } from '../release-store.js';
import { readJournal } from '../update/journal.js';
import { readRunRecord } from '../runners/run-record.js';
import type { UnitControl } from '../update/context.js';
import { readTrialState, revertedPackage } from '../self/trial-state.js';

// The helper's status: per app, what `current` resolves to and what state says.
// A broken state file shows as `stateError` on that app instead of failing the answer.
export async function readStatus(
  ctx: StatusContext,
  app?: string,
): Promise<StatusResult> {
  const names = app ? [app] : Object.keys(ctx.config.apps).sort();
  if (app) requireApp(ctx.config, app);
  // One scan of /proc for every app's signals (status-signals.ts).
  const withUsage = ctx.signals && !ctx.readUsage ? { ...ctx, readUsage: processTreeReader() } : ctx;
  const apps = await Promise.all(names.map((n) => appStatus(withUsage, n)));
  return { root: ctx.paths.root || '/', pid: process.pid, startedAt: ctx.startedAt, recovering: ctx.recovering, apps, trust: await trustStatus(ctx.paths, ctx.now) };
}

// What the trust store holds (docs/design.md §21), never a throw: a store that cannot be read says why.
async function trustStatus(paths: HostPaths, now: number): Promise<TrustStatus> {
  try {
    const s = await readTrustState(paths, now);
    return {
      scheme: s.scheme,
      ...(s.rootVersion !== undefined ? { rootVersion: s.rootVersion } : {}),
      ...(s.timestampVersion !== undefined ? { timestampVersion: s.timestampVersion } : {}),
      ...(s.timestampSignedAt !== undefined ? { timestampSignedAt: s.timestampSignedAt } : {}),
      ...(s.timestampExpired !== undefined ? { timestampExpired: s.timestampExpired } : {}),
    };
  } catch (err) {
    return { scheme: 'tuf', error: (err as Error).message };
  }
}

export interface StatusContext {
  paths: HostPaths;
  config: HostConfig;
  startedAt: number;
  recovering: boolean;
  running: (app: string) => RunningWork | undefined;
  lastTransfers?: ReadonlyMap<string, LastTransfer>;
  blockedInMemory: ReadonlyMap<string, { reason: string; message: string; since: number }>;
  units?: UnitControl;
  now: number;
  // The version this helper runs, for the app steward's `self`.
  ownVersion?: string;
  // Add each app's `signals` (docs/design.md §19): helper.sock's status, not the metrics textfile's.
  signals?: boolean;
  readUsage?: UsageReader;
}

async function appStatus(ctx: StatusContext, name: string): Promise<AppStatus> {
  const cfg = ctx.config.apps[name];
  const cur = await readCurrent(ctx.paths, name).catch(() => ({ state: 'invalid' as const }));
  const j = await readJournal(ctx.paths, name);
  const rec = await readRunRecord(ctx.paths, name).catch(() => null);
  const sup = rec?.supervisor;
  const exits = rec ? await readExits(ctx.paths, name) : null;
  const unit = cfg?.runner === 'unit' && ctx.units ? await unitInfo(ctx.units, cfg.unit) : undefined;
  const self = cfg?.runner === 'self' ? await selfInfo(ctx) : undefined;
  const base = {
    ...(unit ? { unit } : {}),
    ...(self ? { self } : {}),
    supervisor: self
      ? selfSupervisor(ctx, self.version)
      : rec
      ? {
          expected: rec.expected,
          state: sup?.state ?? (rec.expected === 'running' ? ('running' as const) : ('stopped' as const)),
          pid: rec.process?.pid ?? null,
          version: rec.version,
          attempts: sup?.attempts ?? 0,
          nextAttemptAt: sup?.nextAttemptAt ?? null,
          lastExit: sup?.lastExit ? withReason(sup.lastExit, reasonOf(exits, sup.lastExitAt)) : null,
          restartsSinceActivation: exits?.restarts ?? 0,
          giveUpReason: sup?.giveUpReason ?? null,
          since: (sup?.state === 'running' ? sup.lastStartAt : sup?.lastExitAt) ?? rec.startedAt,
        }
      : null,
    name,
    runner: cfg?.runner ?? 'process',
    current: cur.state === 'valid' ? cur.version : null,
    currentState: cur.state,
    running: ctx.running(name) ?? null,
    ...(ctx.lastTransfers?.get(name) ? { lastTransfer: ctx.lastTransfers.get(name) } : {}),
    lastAttempt:
      j.state === 'ok'
        ? {
            attemptId: j.journal.attemptId,
            outcome: j.journal.outcome,
            fromVersion: j.journal.fromVersion,
            targetVersion: j.journal.targetVersion,
            updatedAt: j.journal.updatedAt,
            ...(j.journal.reason ? { reason: j.journal.reason } : {}),
            ...(j.journal.retryAfter !== undefined ? { retryAfter: j.journal.retryAfter } : {}),
            ...(j.journal.logFile ? { logFile: j.journal.logFile } : {}),
          }
        : null,
    ...(j.state === 'invalid' ? { journalError: j.why } : {}),
    watch: await watchOf(ctx, name, j.state === 'ok' ? j.journal : null, cur.state === 'valid' ? cur.version : null),
    ...(ctx.signals && cfg && cfg.runner !== 'self'
      ? {
          signals: await signalsOf({
            paths: ctx.paths,
            config: ctx.config,
            startedAt: ctx.startedAt,
            app: name,
            current: cur.state === 'valid' ? cur.version : null,
            pid: unit ? ('mainPid' in unit && unit.mainPid > 0 ? unit.mainPid : null) : rec?.process && sup?.state !== 'waiting' && sup?.state !== 'error' ? rec.process.pid : null,
            restarts: unit ? ('nRestarts' in unit ? unit.nRestarts : 0) : (exits?.restarts ?? 0),
            ...(ctx.readUsage ? { readUsage: ctx.readUsage } : {}),
          }),
        }
      : {}),
  };
  try {
    const s = await readAppState(ctx.paths, name);
    const holdFile = await readHoldFile(ctx.paths, name);
    return {
      ...base,
      previous: s.previous,
      highestActive: s.highestActive,
      hold: holdViewOf(s.hold, holdFile),
      holdLifted: liftOf(holdFile),
      blocked: ctx.blockedInMemory.get(name) ?? s.blocked,
      quarantined: Object.entries(s.quarantine)
        .filter(([, q]) => quarantineInForce(q, ctx.now, cfg?.quarantine.capMs ?? Infinity))
        .map(([v]) => v)
        .sort(),
    };
  } catch (err) {
    return { ...base, previous: null, highestActive: null, hold: null, blocked: ctx.blockedInMemory.get(name) ?? null, quarantined: [], stateError: (err as Error).message };
  }
}

function withReason(exit: { code: number | null; signal: string | null }, reason: ExitReason | undefined) {
  return reason ? { ...exit, reason } : exit;
}

// The app steward is this helper: it runs, as this process, since it started (systemd restarts
// it; no supervisor record of its own).
function selfSupervisor(ctx: StatusContext, version: string): NonNullable<AppStatus['supervisor']> {
  return { expected: 'running', state: 'running', pid: process.pid, version, attempts: 0, nextAttemptAt: null, lastExit: null, giveUpReason: null, since: ctx.startedAt };
}

async function selfInfo(ctx: StatusContext): Promise<AppStatus['self']> {
  const t = await readTrialState(ctx.paths, process.env);
  const version = ctx.ownVersion ?? 'unknown';
  const fallback = t.launched?.decision === 'fallback' && t.fallback
    ? { code: 'FALLBACK' as const, version: t.fallback.version, starts: t.fallback.starts, message: `steward ${t.fallback.version} never got ready ${t.fallback.starts} starts in a row; the package's ${version} runs instead` }
    : null;
  const pkg = revertedPackage(t, version);
  const packageReverted = pkg === null
    ? null
    : { code: 'REPLACEMENT_UNHEALTHY' as const, version: pkg, message: `the package's steward ${pkg} was tried and REVERTED: steward ${version} runs, older than the package dpkg installed; \`agentctl receipts steward\` and \`journalctl -u steward-helper.service\` say why, and \`dpkg --configure steward\` (or a reinstall of the package) tries it again` };
  return { version, decision: t.launched?.decision ?? null, fallback, packageReverted, problems: t.problems };
}

async function unitInfo(units: UnitControl, name: string): Promise<AppStatus['unit']> {
  try {
    return { name, ...(await units.status(name)) };
  } catch (err) {
    return { name, error: (err as Error).message };
  }
}

// The app's open watch window (watch-window.ts isOpen, with the journal and `current` status read
// already), or null.
async function watchOf(ctx: StatusContext, app: string, j: Journal | null, current: string | null): Promise<AppStatus['watch']> {
  const w = await readWatch(ctx.paths, app);
  if (!w || !isOpen(w, app, j, current, ctx.now)) return null;
  return { attemptId: w.attemptId, version: w.version, fromVersion: w.fromVersion, until: w.until, restarts: w.restarts, maxRestarts: w.maxRestarts, ...(w.closing ? { closing: w.closing } : {}) };
}
