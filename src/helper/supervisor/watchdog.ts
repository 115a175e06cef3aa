// The watchdog of docs/design.md §17 (`start.watchdogMs: N`): the app writes a newline on
// STEWARD_WATCHDOG_FD at least every N/2 ms from a timer; a process silent for N ms after its last
// newline (a blocked event loop, a timer that never fires again) is killed: SIGABRT to its main
// process, SIGKILL 5 s later if it is still there, its exit told as WATCHDOG (Supervisor.noteKill),
// detected within 2 × N. The supervisor respawns it as after any exit (spending the budget), and
// inside a watch window the exit rolls the version back at once (watch-window.ts).
// - Before its first newline a process has its start's grace: the release's health.timeoutMs
//   (30 s without one), or N when that is longer. A slow start is the startup probe's to judge.
// - A restarted helper resumes watching each running process (resume) with a fresh deadline, N
//   from its resume (and a newline written while it was down counts): the app, whose fd holds a
//   reader of its own (app-fds.ts), wrote on while no helper read, and is not blamed for that.
import { logger } from '../../platform/log.js';
import { isSameProcessAlive, type ProcIdentity } from '../../platform/proc-identity.js';
import { appFdPath } from '../runners/app-fds.js';
import { readRunRecord } from '../runners/run-record.js';
import type { StartedProcess } from '../runners/runner.js';
import { readReleaseOf } from '../update/app-process.js';
import type { UpdateContext } from '../update/context.js';
import { openFifoReader, type FifoReader } from './fifo-reader.js';

const log = logger('helper:watchdog');

export const WATCHDOG = 'WATCHDOG';
// SIGABRT first (a core and a stack, where the host keeps them), SIGKILL after this long.
export const WATCHDOG_KILL_AFTER_MS = 5000;
const START_GRACE_MS = 30_000;

export interface WatchdogHooks {
  // The process `pid` of the app is about to be killed by the watchdog (the supervisor tells its
  // exit as WATCHDOG: Supervisor.noteKill).
  killing(app: string, pid: number): void;
}

interface Watched {
  identity: ProcIdentity;
  version: string;
  ms: number;
  reader: FifoReader;
  timer: NodeJS.Timeout;
  kicked: boolean;
}

export class Watchdogs {
  private readonly watched = new Map<string, Watched>();
  private closed = false;

  constructor(
    private readonly ctx: UpdateContext,
    private readonly hooks: WatchdogHooks,
  ) {}

  // A process of the app just started (wired from UpdateContext.onStarted): watched from its start.
  started(app: string, proc: StartedProcess): void {
    void this.watch(app, proc.identity, 'start').catch((err) => log('watchdog app=%s: %s', app, (err as Error).message));
  }

  // At the helper's start: each running process app whose release asks for a watchdog is watched
  // again, with a fresh deadline.
  async resume(): Promise<void> {
    for (const [app, cfg] of Object.entries(this.ctx.config.apps)) {
      if (cfg.runner !== 'process' || this.watched.has(app)) continue;
      const rec = await readRunRecord(this.ctx.paths, app).catch(() => null);
      if (!rec?.process || rec.expected !== 'running' || !(await this.ctx.runner.isAlive(rec.process))) continue;
      await this.watch(app, rec.process, 'resume').catch((err) => log('watchdog app=%s: %s', app, (err as Error).message));
    }
  }

  // Stops watching (the helper stops; its apps run on).
  close(): void {
    this.closed = true;
    for (const app of [...this.watched.keys()]) this.unwatch(app);
  }

  private async watch(app: string, identity: ProcIdentity, how: 'start' | 'resume'): Promise<void> {
    if (this.closed) return;
    const rec = await readRunRecord(this.ctx.paths, app);
    if (!rec?.version || rec.process?.pid !== identity.pid || rec.process.startTicks !== identity.startTicks) return;
    const rf = await readReleaseOf(this.ctx, app, rec.version);
    const ms = rf.start?.watchdogMs;
    const before = this.watched.get(app);
    if (before && before.identity.pid === identity.pid && before.identity.startTicks === identity.startTicks) return;
    this.unwatch(app);
    if (ms === undefined || this.closed) return;
    const grace = how === 'resume' ? ms : Math.max(ms, rf.health?.timeoutMs ?? START_GRACE_MS);
    const w: Watched = {
      identity,
      version: rec.version,
      ms,
      kicked: false,
      reader: openFifoReader(appFdPath(this.ctx.paths, app, 'watchdog'), {
        newline: () => this.kick(app, w),
        // The app closed its fd or exited: its deadline still runs (an exit is the supervisor's).
        closed: () => undefined,
      }),
      timer: setTimeout(() => void this.due(app, w), grace),
    };
    w.timer.unref();
    this.watched.set(app, w);
    log('watching app=%s version=%s pid=%d every %d ms (%s, first deadline in %d ms)', app, rec.version, identity.pid, ms, how, grace);
  }

  private kick(app: string, w: Watched): void {
    if (this.watched.get(app) !== w) return;
    if (!w.kicked) {
      // From the first newline on, the deadline is N after the last one.
      w.kicked = true;
      clearTimeout(w.timer);
      w.timer = setTimeout(() => void this.due(app, w), w.ms);
      w.timer.unref();
      return;
    }
    w.timer.refresh();
  }

  private unwatch(app: string): void {
    const w = this.watched.get(app);
    if (!w) return;
    clearTimeout(w.timer);
    w.reader.close();
    this.watched.delete(app);
  }

  // The deadline passed with no newline: kill the process if it is still the app's recorded one.
  private async due(app: string, w: Watched): Promise<void> {
    if (this.watched.get(app) !== w || this.closed) return;
    this.unwatch(app);
    const rec = await readRunRecord(this.ctx.paths, app).catch(() => null);
    const { pid } = w.identity;
    if (rec?.expected !== 'running' || rec.process?.pid !== pid || rec.process.startTicks !== w.identity.startTicks) return;
    if (!(await isSameProcessAlive(w.identity))) return;
    log('%s app=%s version=%s pid=%d: no newline on STEWARD_WATCHDOG_FD for %d ms; SIGABRT, SIGKILL in %d ms', WATCHDOG, app, w.version, pid, w.ms, WATCHDOG_KILL_AFTER_MS);
    this.hooks.killing(app, pid);
    // Why kill: the app's event loop is stuck (the contract it opted into), and only its main
    // process: the runner ends what it started once it exits. The identity was checked just above.
    signal(pid, 'SIGABRT');
    const t = setTimeout(() => {
      void isSameProcessAlive(w.identity).then((alive) => {
        if (!alive) return;
        log('%s app=%s pid=%d still there %d ms after SIGABRT: SIGKILL', WATCHDOG, app, pid, WATCHDOG_KILL_AFTER_MS);
        signal(pid, 'SIGKILL');
      });
    }, WATCHDOG_KILL_AFTER_MS);
    t.unref();
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    log('could not send %s to pid=%d: %s', sig, pid, (err as Error).message);
  }
}
