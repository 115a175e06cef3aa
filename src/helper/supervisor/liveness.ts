// Liveness checks of running apps (docs/design.md §17): a release whose health names `liveness`
// has its http or tcp check run every `intervalMs` while its version is `current` and its process
// runs, apart from the activation's probe (the startup probe: a slow start is judged there, never
// here). `failureThreshold` failures in a row: within the version's watch window it is rolled
// back; outside one the process is stopped, and the supervisor respawns it (spending the
// budget) as for any exit, with reason LIVENESS_FAILED in the log and the window's reason.
import type { ReleaseFile } from '../../core/release-schemas.js';
import { logger } from '../../platform/log.js';
import { readCurrent } from '../release-store.js';
import { countSignal } from './app-signals.js';
import { readRunRecord } from '../runners/run-record.js';
import { appTarget, readReleaseOf } from '../update/app-process.js';
import type { UpdateContext } from '../update/context.js';
import { checkHttp, checkTcp, type CheckResult } from '../update/probe-checks.js';

const log = logger('helper:liveness');

export const LIVENESS_FAILED = 'LIVENESS_FAILED';

type Liveness = NonNullable<NonNullable<ReleaseFile['health']>['liveness']>;

interface Armed {
  version: string;
  spec: Liveness;
  target: { http?: string; tcp?: string };
  timer: NodeJS.Timeout;
  failures: number;
  checking: boolean;
}

export interface LivenessHooks {
  // The version failed `failureThreshold` checks in a row. Returns true when its watch window
  // took it (a rollback follows); false to have the process restarted.
  failed(app: string, version: string, why: string): Promise<boolean>;
  // The failing process `pid` is about to be stopped (the supervisor tells its exit as LIVENESS_FAILED).
  stopping?(app: string, pid: number): void;
  // The failing process was stopped and the app's lock released: the supervisor's pass respawns
  // it (the pass its exit asked for found the lock held, and skipped the app).
  stopped(app: string): void;
}

export class LivenessChecks {
  private readonly armed = new Map<string, Armed>();
  private closed = false;

  constructor(
    private readonly ctx: UpdateContext,
    private readonly hooks: LivenessHooks,
  ) {}

  // Arms, re-arms or disarms each process app's check for the version `current` resolves to. Cheap
  // when nothing changed (a read of `current` and of a cached release file per app).
  async sync(): Promise<void> {
    if (this.closed) return;
    for (const [app, cfg] of Object.entries(this.ctx.config.apps)) {
      if (cfg.runner !== 'process') continue;
      const cur = await readCurrent(this.ctx.paths, app).catch(() => null);
      const version = cur?.state === 'valid' ? cur.version : null;
      const now = this.armed.get(app);
      if (now && now.version === version) continue;
      if (now) this.disarm(app);
      if (!version) continue;
      const rf = await readReleaseOf(this.ctx, app, version).catch(() => null);
      const spec = rf?.health?.liveness;
      if (!rf || !spec || !(rf.health?.http || rf.health?.tcp)) continue;
      const target = rf.health.http ? { http: rf.health.http } : { tcp: rf.health.tcp as string };
      const timer = setInterval(() => void this.tick(app), spec.intervalMs);
      timer.unref();
      this.armed.set(app, { version, spec, target, timer, failures: 0, checking: false });
      log('liveness armed app=%s version=%s every %d ms, %d failures in a row', app, version, spec.intervalMs, spec.failureThreshold);
    }
  }

  close(): void {
    this.closed = true;
    for (const app of [...this.armed.keys()]) this.disarm(app);
  }

  private disarm(app: string): void {
    const a = this.armed.get(app);
    if (a) clearInterval(a.timer);
    this.armed.delete(app);
  }

  private async tick(app: string): Promise<void> {
    const a = this.armed.get(app);
    if (!a || a.checking || this.closed) return;
    a.checking = true;
    try {
      // Only a process believed up is checked: an update, a stop or a respawn wait is another's.
      if (this.ctx.locks.get(app) || this.ctx.blockedInMemory.has(app)) return;
      const rec = await readRunRecord(this.ctx.paths, app).catch(() => null);
      if (!rec || rec.expected !== 'running' || rec.version !== a.version || !rec.process || (rec.supervisor && rec.supervisor.state !== 'running')) {
        a.failures = 0;
        return;
      }
      const r: CheckResult = a.target.http ? await checkHttp(a.target.http, a.spec.timeoutMs) : await checkTcp(a.target.tcp as string, a.spec.timeoutMs);
      if (this.armed.get(app) !== a) return;
      if (r.ok) {
        a.failures = 0;
        return;
      }
      a.failures++;
      // Each failed check is a signal (docs/design.md §19), whatever the threshold then decides.
      await countSignal(this.ctx.paths, app, 'livenessFailures', this.ctx.startedAt ?? this.ctx.clock.now()).catch((err) => log('could not count the liveness failure of app=%s: %s', app, (err as Error).message));
      log('liveness app=%s version=%s failed (%d of %d): %s', app, a.version, a.failures, a.spec.failureThreshold, r.detail);
      if (a.failures < a.spec.failureThreshold) return;
      a.failures = 0;
      const why = `its liveness check failed ${a.spec.failureThreshold} times in a row (the last: ${r.detail})`;
      if (await this.hooks.failed(app, a.version, why)) return;
      await this.restart(app, a.version, rec.process.pid, why);
    } catch (err) {
      log('liveness app=%s: %s', app, (err as Error).message);
    } finally {
      a.checking = false;
    }
  }

  // Stops the failing process under the app's lock; its exit is the supervisor's to hear and
  // respawn (a respawn spends the budget).
  private async restart(app: string, version: string, pid: number, why: string): Promise<void> {
    let held;
    try {
      held = this.ctx.locks.tryAcquire(app, { attemptId: 'supervisor', op: 'supervise', phase: 'liveness', startedAt: this.ctx.clock.now() });
    } catch {
      return; // an update or a stop took the app meanwhile
    }
    try {
      const rec = await readRunRecord(this.ctx.paths, app);
      if (!rec?.process || rec.process.pid !== pid || rec.version !== version || rec.expected !== 'running') return;
      log('%s app=%s version=%s pid=%d: %s; stopping it for the supervisor to respawn', LIVENESS_FAILED, app, version, pid, why);
      const cfg = this.ctx.config.apps[app];
      this.hooks.stopping?.(app, pid);
      await this.ctx.runner.stop(await appTarget(this.ctx, app, rec), { timeoutMs: cfg?.runner === 'process' ? cfg.stopTimeoutMs : this.ctx.stopTimeoutMs });
    } finally {
      held.release();
    }
    this.hooks.stopped(app);
  }
}
