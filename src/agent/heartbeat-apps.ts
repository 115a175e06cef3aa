// The `apps` of a heartbeat from the helper's status answer (docs/design.md §6), pure.
import { escapeControlChars } from '../core/control-chars.js';
import { isExitReason } from '../core/exit-reasons.js';
import { MAX_HEARTBEAT_APPS } from '../core/heartbeat-limits.js';
import { heartbeatAppSchema, type HeartbeatApp, type HeartbeatVersion } from '../core/heartbeat-schema.js';
import { isVersion } from '../core/version.js';
import type { AppStatus } from '../protocol/answers.js';
import type { ScrapedSignals } from './metrics/app-scrapes.js';

// Maps each app of a status answer to a heartbeat app (the app steward with its `self`, which a
// heartbeat v1 leaves out: withoutSelf); an app that does not fit the schema
// (a version the helper reports that is not one) is left out and named in `skipped`. `scraped`: the
// agent's scrapes of the apps' own metrics (v7 `signals.requests`, `errors`, `scrape`).
export function heartbeatApps(apps: readonly AppStatus[], scraped?: ReadonlyMap<string, ScrapedSignals>): { apps: HeartbeatApp[]; skipped: string[] } {
  const out: HeartbeatApp[] = [];
  const skipped: string[] = [];
  for (const a of apps.slice(0, MAX_HEARTBEAT_APPS)) {
    // The status answer came over a socket: every field is checked before it goes into a signed heartbeat.
    const signals = signalsOf(a, scraped?.get(a.name));
    const parsed = heartbeatAppSchema.safeParse({
      name: a.name,
      // The app steward: the version that runs (this helper), which is `current` once a
      // self-update committed, the package's version before any, and the package's after a
      // fallback; `current` alone said `none` on a host that never updated itself.
      current: a.self && isVersion(a.self.version) ? a.self.version : a.current,
      previous: a.previous,
      held: a.hold !== null && a.hold !== undefined,
      // v6: the hold itself (appsForVersion strips it below 6). A helper from before expiries says no `until`.
      ...(a.hold ? { hold: holdOf(a.hold) } : {}),
      blocked: a.blocked !== null && a.blocked !== undefined,
      supervisor: supervisorOf(a),
      // v4, only when there is one (appsForVersion strips them for a control plane that did not list 4).
      ...(a.watch ? { watch: { version: a.watch.version, until: a.watch.until, restarts: a.watch.restarts, maxRestarts: a.watch.maxRestarts } } : {}),
      ...(a.supervisor?.lastExit ? { lastExit: lastExitOf(a.supervisor.lastExit) } : {}),
      ...(a.supervisor?.restartsSinceActivation !== undefined ? { restarts: Math.max(0, Math.min(a.supervisor.restartsSinceActivation, 1_000_000)) } : {}),
      // v6: an update waiting to try its download again (its phase, docs/design.md §18).
      ...(a.running?.phase === 'fetch-retrying' ? { fetchRetrying: { attemptId: a.running.attemptId } } : {}),
      // v7: the app's signals (docs/design.md §19), when this helper reports them.
      ...(signals ? { signals } : {}),
      ...(a.self
        ? {
            self: {
              fallback: a.self.fallback ? { version: a.self.fallback.version, starts: a.self.fallback.starts } : null,
              packageReverted: a.self.packageReverted ? { version: a.self.packageReverted.version } : null,
            },
          }
        : {}),
    });
    if (parsed.success) out.push(parsed.data);
    else skipped.push(a.name);
  }
  return { apps: out, skipped };
}

// The signals as a heartbeat carries them: counts clamped to the schema's bounds, `since` as an
// ISO time; null when the helper said none or said nonsense (the app is reported without them).
function signalsOf(a: AppStatus, scraped: ScrapedSignals | undefined): HeartbeatApp['signals'] | null {
  const s = a.signals;
  if (!s || typeof s.since !== 'number' || !Number.isFinite(s.since) || s.since < 0 || s.since > 8.64e15) return null;
  const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? Math.max(0, Math.min(Math.floor(v), 1_000_000_000)) : 0);
  // Whole numbers: the heartbeat is signed as canonical JSON, which holds no floats (docs/design.md §6).
  const cpu = typeof s.cpuSeconds === 'number' && Number.isFinite(s.cpuSeconds) ? Math.max(0, Math.min(Math.floor(s.cpuSeconds), 1e12)) : 0;
  const rss = typeof s.rssBytes === 'number' && Number.isFinite(s.rssBytes) ? Math.max(0, Math.min(Math.floor(s.rssBytes), Number.MAX_SAFE_INTEGER)) : 0;
  // A scraped counter beyond 2^53 cannot be carried exactly: left out rather than rounded.
  const big = (v: number | undefined) => (v !== undefined && Number.isFinite(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER ? { v: Math.floor(v) } : null);
  const req = big(scraped?.requests);
  const err = big(scraped?.errors);
  return {
    since: new Date(s.since).toISOString(),
    restarts: count(s.restarts),
    livenessFailures: count(s.livenessFailures),
    watchdogKills: count(s.watchdogKills),
    oomKills: count(s.oomKills),
    cpuSeconds: cpu,
    rssBytes: rss,
    ...(req ? { requests: req.v } : {}),
    ...(err ? { errors: err.v } : {}),
    ...(scraped ? { scrape: scraped.scrape } : {}),
  };
}

// A hold as a heartbeat carries it: its text without control characters and within the schema's
// lengths, so that an odd hold never drops the whole app.
function holdOf(h: NonNullable<AppStatus['hold']>): NonNullable<HeartbeatApp['hold']> {
  return { by: escapeControlChars(h.by).slice(0, 256), reason: escapeControlChars(h.reason).slice(0, 512), at: h.at, until: h.until ?? null };
}

// An exit as a heartbeat carries it: a code within the schema's range, a signal name of capitals
// and digits (SIGKILL), anything else null, so that an odd value never drops the whole app.
function lastExitOf(e: { code: number | null; signal: string | null; reason?: string }): NonNullable<HeartbeatApp['lastExit']> {
  const code = e.code !== null && Number.isInteger(e.code) && Math.abs(e.code) <= 1_000_000 ? e.code : null;
  const signal = e.signal?.replace(/[^A-Z0-9]/g, '').slice(0, 16) || null;
  return { code, signal, ...(isExitReason(e.reason) ? { reason: e.reason } : {}) };
}

function supervisorOf(a: AppStatus): HeartbeatApp['supervisor'] {
  if (a.supervisor) {
    const s = a.supervisor;
    return { state: s.state, ...(s.pid !== null && s.pid > 0 ? { pid: s.pid } : {}), attempts: s.attempts, since: s.since };
  }
  // A `unit` app: systemd restarts it; report what it says.
  if (a.unit && 'activeState' in a.unit) {
    const u = a.unit;
    const state = u.activeState === 'active' ? 'running' : u.activeState === 'failed' ? 'error' : u.activeState === 'activating' ? 'waiting' : 'stopped';
    return { state, ...(u.mainPid > 0 ? { pid: u.mainPid } : {}), attempts: Math.max(0, Math.min(u.nRestarts, 1_000_000)), since: null };
  }
  return { state: 'stopped', attempts: 0, since: null };
}

// The apps as a heartbeat v1 carries them: without `self` (docs/design.md §16: a control plane that did
// not list v2 refuses the field).
export function withoutSelf(apps: readonly HeartbeatApp[]): HeartbeatApp[] {
  return apps.map(({ self: _self, ...a }) => a);
}

// The apps as a heartbeat of version `v` carries them: v1 without `self`, v2 without
// `self.packageReverted` (a control plane that listed 2 but not 3 refuses it), v3 and below
// without `watch` and `lastExit`, v4 without `lastExit.reason` and `restarts`, v5 without `hold` and `fetchRetrying`,
// v6 without `signals`.
export function appsForVersion(apps: readonly HeartbeatApp[], v: HeartbeatVersion): HeartbeatApp[] {
  const upTo6 = v >= 7 ? [...apps] : apps.map(({ signals: _s, ...a }) => a);
  const upTo5 = v >= 6 ? upTo6 : upTo6.map(({ hold: _h, fetchRetrying: _f, ...a }) => a);
  const upTo4 = v >= 5 ? upTo5 : upTo5.map(({ restarts: _r, ...a }) => (a.lastExit?.reason ? { ...a, lastExit: { code: a.lastExit.code, signal: a.lastExit.signal } } : a));
  const upTo3 = v >= 4 ? upTo4 : upTo4.map(({ watch: _w, lastExit: _e, ...a }) => a);
  if (v === 1) return withoutSelf(upTo3);
  if (v === 2) return upTo3.map((a) => (a.self ? { ...a, self: { fallback: a.self.fallback } } : a));
  return upTo3;
}
