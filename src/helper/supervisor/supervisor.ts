import { decide, initialSupervisorState, type SupervisorRecordState } from '../../core/supervisor-decision.js';
import { logger } from '../../platform/log.js';
import { readCurrent } from '../release-store.js';
import { readRunRecord, writeRunRecord } from '../runners/run-record.js';
import type { ExitInfo, StartedProcess } from '../runners/runner.js';
import { readAppState } from '../state/app-state.js';
import { appTarget, restartPolicyOf, startVersion } from '../update/app-process.js';
import type { UpdateContext } from '../update/context.js';
import { capAppLogs } from './cap-logs.js';
import { countSignal } from './app-signals.js';
import { countExit } from './exits-since-activation.js';
import type { ExitReason } from '../../core/exit-reasons.js';

const log = logger('helper:supervisor');

// How long a pass leaves an own child found dead for its runner to report how it ended (its
// code or signal: the give-up reason and `lastExit` name it) before deciding on an unknown exit.
export const EXIT_REPORT_MS = 10_000;

export interface SupervisorOptions {
  // The periodic sweep (docs/design.md §5: 60 s).
  sweepMs: number;
  // Adopted processes are not the helper's children: their exit is polled (2 s). The poll runs
  // only while there is one: a child's exit is heard at once (SIGCHLD), so an idle helper whose
  // apps are all its children has no timer but the sweep (issue 8 row 5: wakeups).
  pollMs: number;
  // How often the log files of apps that should run are held to their logMaxBytes (cap-logs.ts);
  // only while there is one, and only for a runner whose output goes to those files.
  logCheckMs?: number;
}

// The supervisor of docs/design.md §5 for `process` apps. Invariant: an app whose record says
// `expected: running` has exactly one live process. One reconcile pass, three triggers (start,
// an exit heard at once, a periodic sweep); passes are serialized and a burst of exits
// coalesces into one queued pass; one bad record never ends a pass. An app whose lock is held
// (an update, start, stop) is left to its owner: a sweep never undoes an update's stop or start,
// and an exit during a probe is the probe's business, not a respawn.
export class Supervisor {
  private chain: Promise<void> = Promise.resolve();
  private queued: Promise<void> | null = null;
  private readonly exits = new Map<string, { pid: number; info: ExitInfo }>();
  private readonly children = new Map<string, { pid: number; exited: Promise<ExitInfo> }>();
  private readonly waits = new Map<string, NodeJS.Timeout>();
  // Own children found dead whose exit the runner had not reported, since when (monotonic).
  private readonly unreported = new Map<string, { pid: number; since: number }>();
  // Kills the helper itself asked for (the watchdog, a liveness restart), by app: the exit of that
  // pid is told with the reason (noteKill).
  private readonly killReasons = new Map<string, { pid: number; reason: ExitReason }>();
  private sweep: NodeJS.Timeout | null = null;
  private poll: NodeJS.Timeout | null = null;
  private logCheck: NodeJS.Timeout | null = null;
  private capping: Promise<void> | null = null;
  // Apps whose last reconcile found them expected to run: their log files may grow.
  private readonly expectedUp = new Set<string>();
  // Apps whose last reconcile found their process alive but not a child of this helper.
  private readonly adopted = new Set<string>();
  private closed = false;
  // Hears every change a pass made to an app: a respawn (`respawned`), or another state written
  // (the metrics textfile follows them).
  onChange: ((app: string, respawned: boolean) => void) | undefined;
  // Hears every exit a pass decided on (not a stop it asked for), once its decision is durable:
  // `gaveUp` when the app is now in `error` (the watch window of docs/design.md §17 counts them).
  onExit: ((app: string, exit: ExitInfo, gaveUp: boolean) => void) | undefined;

  constructor(
    private readonly ctx: UpdateContext,
    private readonly opts: SupervisorOptions = { sweepMs: 60_000, pollMs: 2_000 },
  ) {}

  // Hears the exit of a process this helper started (wired as UpdateContext.onStarted).
  watch(app: string, proc: StartedProcess): void {
    const pid = proc.identity.pid;
    this.children.set(app, { pid, exited: proc.exited });
    void proc.exited.then((info) => {
      if (this.children.get(app)?.pid !== pid) return;
      this.children.delete(app);
      this.exits.set(app, { pid, info });
      void this.requestPass(`exit of ${app} pid ${pid}`);
    });
  }

  // The next exit of `app`'s process `pid` is one the helper caused, for `reason`: the pass that
  // decides it records the reason with it (status, heartbeats, the watch window). Call before the
  // kill. A reason the runner found itself (OOM) wins: the kernel's word is the more precise.
  noteKill(app: string, pid: number, reason: ExitReason): void {
    this.killReasons.set(app, { pid, reason });
  }

  // Starts the periodic sweep; each pass then arms or disarms the poll of adopted processes.
  start(): void {
    this.sweep = setInterval(() => void this.requestPass('sweep'), this.opts.sweepMs);
  }

  // Whether the poll of adopted processes is armed (for tests and the footprint bench's reading).
  get polling(): boolean {
    return this.poll !== null;
  }

  // Stops every timer; processes keep running.
  close(): void {
    this.closed = true;
    if (this.sweep) clearInterval(this.sweep);
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
    if (this.logCheck) clearInterval(this.logCheck);
    this.logCheck = null;
    for (const t of this.waits.values()) clearTimeout(t);
    this.waits.clear();
  }

  // Queues one pass; a pass already queued (not yet running) serves this request too.
  requestPass(why: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.queued) return this.queued;
    const pass = this.chain.then(async () => {
      this.queued = null;
      log('pass (%s)', why);
      await this.passNow();
    });
    this.queued = pass;
    this.chain = pass.catch(() => {});
    return pass;
  }

  private async passNow(): Promise<void> {
    for (const [app, cfg] of Object.entries(this.ctx.config.apps).sort()) {
      if (cfg.runner !== 'process') continue;
      try {
        await this.reconcile(app);
      } catch (err) {
        log('reconcile app=%s failed: %s', app, (err as Error).message);
        // Not known to be a child's: keep polling it, as before this pass.
        this.adopted.add(app);
      }
    }
    // Forget apps no longer configured (a config is read at start, but keep the set honest).
    for (const app of this.adopted) if (this.ctx.config.apps[app]?.runner !== 'process') this.adopted.delete(app);
    this.armPoll();
    this.armLogCheck();
  }

  // The log check runs while some app should run (its output may grow), for a runner whose
  // output goes to the app's log file; a pass also looks once.
  private armLogCheck(): void {
    const every = this.opts.logCheckMs;
    if (this.closed || this.sweep === null || !every || this.ctx.runner.tailLog) return;
    void this.capLogs();
    if (this.expectedUp.size > 0 && !this.logCheck) this.logCheck = setInterval(() => void this.capLogs(), every);
    if (this.expectedUp.size === 0 && this.logCheck) {
      clearInterval(this.logCheck);
      this.logCheck = null;
    }
  }

  // One look at the log files at a time.
  private capLogs(): Promise<void> {
    this.capping ??= capAppLogs(this.ctx).finally(() => (this.capping = null));
    return this.capping;
  }

  // The poll runs while some app's process is adopted, at pollMs (docs/design.md §5: 2 s).
  private armPoll(): void {
    if (this.closed || this.sweep === null) return;
    if (this.adopted.size > 0 && !this.poll) this.poll = setInterval(() => void this.pollAdopted(), this.opts.pollMs);
    if (this.adopted.size === 0 && this.poll) {
      clearInterval(this.poll);
      this.poll = null;
    }
  }

  private async pollAdopted(): Promise<void> {
    for (const [app, cfg] of Object.entries(this.ctx.config.apps)) {
      if (cfg.runner !== 'process' || this.children.has(app) || this.ctx.locks.get(app)) continue;
      const rec = await readRunRecord(this.ctx.paths, app).catch(() => null);
      // Only a process believed up is polled: an app in `error` stays down, and a `waiting` one
      // has its respawn timer.
      const believedUp = !rec?.supervisor || rec.supervisor.state === 'running';
      if (rec?.expected === 'running' && believedUp && rec.process && !(await this.ctx.runner.isAlive(rec.process))) {
        void this.requestPass(`adopted ${app} pid ${rec.process.pid} is gone`);
      }
    }
  }

  // One app's reconcile, under its lock.
  private async reconcile(app: string): Promise<void> {
    const { ctx } = this;
    if (ctx.locks.get(app) || ctx.blockedInMemory.has(app)) return;
    const held = ctx.locks.tryAcquire(app, { attemptId: 'supervisor', op: 'supervise', phase: 'reconcile', startedAt: ctx.clock.now() });
    try {
      // Until this pass learns otherwise, the app has no adopted process to poll: a blocked app, one
      // expected stopped or without a valid current is left alone by a pass, so a poll would not help.
      this.adopted.delete(app);
      this.expectedUp.delete(app);
      // The three reads are independent: issued together (an exit's respawn waits on them),
      // used in order, so an error is reported as before and a later read's is never seen first.
      const [stateP, recP, curP] = [readAppState(ctx.paths, app), readRunRecord(ctx.paths, app), readCurrent(ctx.paths, app)];
      recP.catch(() => {});
      curP.catch(() => {});
      const state = await stateP;
      if (state.blocked) return;
      const rec = await recP;
      if (!rec || rec.expected !== 'running') return;
      this.expectedUp.add(app);
      const cur = await curP;
      if (cur.state !== 'valid') return;
      const sup: SupervisorRecordState = rec.supervisor ?? { ...initialSupervisorState(), state: 'running', lastStartAt: rec.startedAt };
      const policy = restartPolicyOf(ctx, app);
      const now = ctx.clock.now();
      // The exit of our own child, heard for this very pid, is proof enough (it was reaped):
      // asking /proc again would only delay its respawn (issue 8 row 4).
      const heardDead = rec.process !== null && this.exits.get(app)?.pid === rec.process.pid;
      const alive = rec.process && !heardDead ? await ctx.runner.isAlive(rec.process) : false;
      if (alive && rec.process && this.children.get(app)?.pid !== rec.process.pid) {
        // Not this helper's child: its exit is heard from whoever started it where the runner can
        // tell (an app's socket keeper), else polled.
        const back = ctx.runner.reattach ? await ctx.runner.reattach(app, rec.process).catch(() => null) : null;
        if (back) this.watch(app, back);
        else this.adopted.add(app);
      }
      // Our own child, dead, whose exit its runner has not reported yet (Node's SIGCHLD not yet
      // delivered; under systemd, the systemd-run client still asking for the unit's result, which
      // takes seconds on a busy host): wait briefly to learn its code or signal. If it is still not
      // in, this app is left for the report's own pass, bounded, so a runner that never reports
      // cannot stall the app: after EXIT_REPORT_MS the exit is decided as unknown.
      const child = this.children.get(app);
      if (!alive && rec.process && child?.pid === rec.process.pid && !this.exits.has(app)) {
        const info = await Promise.race([child.exited, new Promise<null>((r) => setTimeout(() => r(null), 1000))]);
        if (info) this.exits.set(app, { pid: child.pid, info });
        else {
          const seen = this.unreported.get(app);
          const since = seen?.pid === child.pid ? seen.since : ctx.clock.monotonic() - 1000;
          const left = EXIT_REPORT_MS - (ctx.clock.monotonic() - since);
          if (left > 0) {
            this.unreported.set(app, { pid: child.pid, since });
            log('exit app=%s pid=%d not reported yet; deciding within %d ms', app, child.pid, Math.ceil(left));
            this.wakeAt(app, left);
            return;
          }
        }
      }
      this.unreported.delete(app);
      // A heard exit comes from the runner once everything the process started has ended with it.
      const heard = rec.process !== null && this.exits.get(app)?.pid === rec.process.pid;
      let d;
      let exitLine: (() => void) | null = null;
      let exitSeen: ExitInfo | null = null;
      let countLater: { pid: number; at: number } | null = null;
      if (alive) {
        d = decide(sup, { kind: 'tick', at: now }, policy, now);
      } else if (sup.state === 'running') {
        const heard = this.exits.get(app);
        const known: ExitInfo = heard && rec.process && heard.pid === rec.process.pid ? heard.info : { code: null, signal: null };
        const killed = this.killReasons.get(app);
        const info: ExitInfo = !known.reason && killed && rec.process && killed.pid === rec.process.pid ? { ...known, reason: killed.reason } : known;
        d = decide(sup, { kind: 'exited', at: now, code: info.code, signal: info.signal }, policy, now);
        exitSeen = info;
        // Counted (exits-since-activation.ts) before the record that holds the exit when it has a
        // reason; an ordinary exit's count waits until its replacement is spawned. A count that
        // cannot be written (a full disk) is said and never stops the decision: it is for display.
        if (rec.process) {
          const exit = { pid: rec.process.pid, at: now, reason: info.reason };
          if (info.reason || d.decision.action !== 'respawn-now') await countExit(ctx.paths, app, exit).catch((err) => log('could not count the exit of app=%s: %s', app, (err as Error).message));
          else countLater = exit;
          // The signals of docs/design.md §19: a kill by the OOM killer or the watchdog.
          const counter = info.reason === 'OOM' ? 'oomKills' : info.reason === 'WATCHDOG' ? 'watchdogKills' : null;
          if (counter) await countSignal(ctx.paths, app, counter, ctx.startedAt ?? now).catch((err) => log('could not count the %s of app=%s: %s', counter, app, (err as Error).message));
        }
        const { action } = d.decision;
        const line = () => log('exit app=%s pid=%s code=%s signal=%s%s -> %s', app, rec.process?.pid, info.code, info.signal, info.reason ? ` reason=${info.reason}` : '', action);
        // Before a respawn the line waits until the replacement is spawned: a log line is a
        // synchronous write to stderr (the journal), 0.1-0.3 ms on the respawn's clock.
        if (action === 'respawn-now') exitLine = line;
        else line();
      } else {
        d = decide(sup, { kind: 'tick', at: now }, policy, now);
      }
      this.exits.delete(app);
      if (!alive) this.killReasons.delete(app);
      // A respawn now records the exit with the new process, in the one record write that
      // follows the spawn: a crash before that write leaves the record as it was before the exit,
      // a state a crash just before the exit was heard leaves too (the restarted helper's first
      // pass starts the app; a process the crash left unrecorded is stopped first). Every other
      // decision is durable before anything acts on it (`error` before the stop, docs/design.md §5).
      const changed = JSON.stringify(d.next) !== JSON.stringify(sup);
      if (changed && d.decision.action !== 'respawn-now') await writeRunRecord(ctx.paths, { ...rec, supervisor: d.next });
      // A process found dead rather than heard (adopted, or its exit not reported): whatever it
      // started is killed now, at once, as its runner does after an exit it hears (docs/design.md §5:
      // exactly one live instance). After a decision that is durable (`error` before any stop).
      if (!alive && rec.process && !heard) await ctx.runner.stop(await appTarget(ctx, app, rec), { timeoutMs: 0 });
      switch (d.decision.action) {
        case 'respawn-now':
          try {
            await this.respawn(app, cur.version, d.next);
          } finally {
            exitLine?.();
            if (countLater) await countExit(ctx.paths, app, countLater).catch((err) => log('could not count the exit of app=%s: %s', app, (err as Error).message));
          }
          break;
        case 'wait-until':
          this.wakeAt(app, d.decision.at - now);
          break;
        case 'give-up':
          log('gave up app=%s: %s', app, d.decision.reason);
          break;
        default:
          break;
      }
      if (changed || d.decision.action === 'respawn-now') this.onChange?.(app, d.decision.action === 'respawn-now');
      if (exitSeen) this.onExit?.(app, exitSeen, d.decision.action === 'give-up');
    } finally {
      held.release();
    }
  }

  // `sup`: the supervisor state the exit (or the due wait) left, not yet written.
  private async respawn(app: string, version: string, sup: SupervisorRecordState): Promise<void> {
    try {
      await startVersion(this.ctx, app, version, 'respawn', sup);
    } catch (err) {
      // A spawn that fails at once is a start and an exit.
      log('respawn app=%s failed: %s', app, (err as Error).message);
      const rec = await readRunRecord(this.ctx.paths, app);
      if (!rec) return;
      const policy = restartPolicyOf(this.ctx, app);
      const now = this.ctx.clock.now();
      const started = decide(sup, { kind: 'started', at: now, respawn: true }, policy, now).next;
      const exit = exitOfFailedStart(err);
      const d = decide(started, { kind: 'exited', at: now, ...exit }, policy, now);
      await writeRunRecord(this.ctx.paths, { ...rec, process: null, supervisor: d.next });
      if (d.decision.action === 'wait-until') this.wakeAt(app, d.decision.at - now);
      if (d.decision.action === 'respawn-now') this.wakeAt(app, 0);
      this.onExit?.(app, exit, d.decision.action === 'give-up');
    }
  }

  private wakeAt(app: string, delayMs: number): void {
    const old = this.waits.get(app);
    if (old) clearTimeout(old);
    const t = setTimeout(() => {
      this.waits.delete(app);
      void this.requestPass(`respawn due for ${app}`);
    }, Math.max(0, delayMs));
    this.waits.set(app, t);
  }
}

// How a process that exited before its start completed ended, when the runner could tell
// (systemd's "code=exited/status=3"): the give-up reason then names it, not a bare "exited".
function exitOfFailedStart(err: unknown): { code: number | null; signal: string | null } {
  const exit = (err as { details?: { exit?: { code?: unknown; signal?: unknown } } })?.details?.exit;
  return {
    code: typeof exit?.code === 'number' ? exit.code : null,
    signal: typeof exit?.signal === 'string' ? exit.signal : null,
  };
}
