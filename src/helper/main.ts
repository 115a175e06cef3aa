import { Command, CommanderError } from 'commander';
import { toStewardError } from '../core/errors.js';
import { hostPaths } from '../core/paths.js';
import { enableDefaultLogs, logger } from '../platform/log.js';
import { acquireHelperLock, type HelperLock } from '../platform/lock.js';
import { readOwnVersion } from '../platform/own-version.js';
import { resolveRootPrefix } from '../platform/root-prefix.js';
import { systemAccounts } from '../platform/users.js';
import { buildCore } from './build-core.js';
import { loadHostConfig } from '../host/config.js';
import { makeHandlers } from './handlers.js';
import { rollBackByWindow } from './ops/rollback.js';
import { liftExpiredHold } from './ops/hold.js';
import { HoldExpiry, liftDueHolds } from './holds/hold-expiry.js';
import { WatchWindows } from './update/watch-window.js';
import { LivenessChecks } from './supervisor/liveness.js';
import { Watchdogs } from './supervisor/watchdog.js';
import { ensureLayout } from './layout.js';
import { keepHostTextfile } from './metrics/host-textfile.js';
import { makeDispatch } from './server/dispatch.js';
import { startApiServer, type ApiServer } from './server/api-server.js';
import { openRunDir, prepareRunDir } from './server/bind-sockets.js';
import { startApps } from './start-apps.js';
import { Supervisor } from './supervisor/supervisor.js';
import { AGENT_APP } from '../core/name-checks.js';
import { SELF_APP } from '../core/self-schemas.js';
import { expectAgentRoundTrip } from './self/agent-round-trip.js';
import { probeSelf } from './self/probe-self.js';
import { settleTrial } from './self/settle-trial.js';
import { readTrialState } from './self/trial-state.js';
import { resetStartCounter } from './self/trial-steps.js';

const log = logger('helper:main');

// The steward-helper program's options (its man page is made from them too).
export function helperProgram(): Command {
  return new Command('steward-helper')
    .description('the root helper: stage, activate, probe and roll back releases, supervise apps, in the foreground')
    .option('--root <dir>', 'root prefix of the host layout (tests, demos)')
    .option('--config <file>', 'host config (default <root>/etc/steward/steward.json)')
    .version(readOwnVersion(), '-V, --version', 'print the steward version')
    .exitOverride();
}

// steward-helper [--root DIR] [--config FILE]: the root helper, in the foreground.
export async function main(argv: string[]): Promise<number> {
  enableDefaultLogs();
  const program = helperProgram();
  try {
    program.parse(argv, { from: 'user' });
  } catch (err) {
    // --help and --version are done; anything else is a usage mistake.
    return err instanceof CommanderError && err.exitCode === 0 ? 0 : 2;
  }
  const opts = program.opts<{ root?: string; config?: string }>();
  const isRoot = process.getuid?.() === 0;
  let lock: HelperLock | null = null;
  const servers: ApiServer[] = [];
  // What the app runner keeps only to hear of exits, ended however this helper stops (the apps
  // run on): KillMode=process would leave it in the unit's cgroup.
  let releaseRunner: () => void = () => {};
  try {
    const root = await resolveRootPrefix({ flag: opts.root, env: process.env.STEWARD_ROOT, isRoot });
    if (isRoot && opts.root === undefined && process.env.STEWARD_ROOT) log('STEWARD_ROOT=%s is ignored for root (root names a root prefix with --root only, so that a variable left in a shell never moves where root writes); --root DIR names a prefix', process.env.STEWARD_ROOT);
    const paths = hostPaths(root);
    const config = await loadHostConfig(opts.config ?? paths.configFile, { isRoot, accounts: systemAccounts, root });
    if (!isRoot) log("not running as root: apps run as this helper's own user (uid %d)", process.getuid?.() ?? -1);

    // 1. One helper per root.
    await prepareRunDir(paths.runDir);
    lock = await acquireHelperLock(paths.helperLock, {
      onCompromised: (err) => {
        // Another helper owns this root now; two would corrupt the journal. Stop at once.
        process.stderr.write(`steward-helper: helper.lock compromised (${err.message}); exiting\n`);
        process.exit(1);
      },
    });
    await ensureLayout(paths);
    const core = await buildCore(paths, config, isRoot);
    releaseRunner = () => core.runner.release?.();
    const supervisor = new Supervisor(core, config.supervisor);
    // The watchdog (§17): a process silent on STEWARD_WATCHDOG_FD past its deadline is killed, and
    // its exit told as WATCHDOG.
    const watchdogs = new Watchdogs(core, { killing: (app, pid) => supervisor.noteKill(app, pid, 'WATCHDOG') });
    core.onStarted = (app, proc) => {
      supervisor.watch(app, proc);
      watchdogs.started(app, proc);
    };
    // The watch window after `active` (docs/design.md §17): exits within it roll the version back.
    const windows = new WatchWindows(core, (app, w, why) => rollBackByWindow(core, app, w, why));
    supervisor.onExit = (app, exit, gaveUp) => void windows.exited(app, exit, gaveUp);
    // Liveness of running apps (§17): a failure within a window rolls back, else restarts.
    const liveness = new LivenessChecks(core, {
      failed: (app, version, why) => windows.breach(app, version, why),
      stopping: (app, pid) => supervisor.noteKill(app, pid, 'LIVENESS_FAILED'),
      stopped: (app) => void supervisor.requestPass(`liveness restart of ${app}`),
    });
    // The node_exporter textfile (docs/design.md §12), rewritten after each change and at no other time:
    // a supervisor pass that changed nothing does not touch it.
    const textfile = config.metrics?.textfile ? keepHostTextfile(core, config.metrics.textfile) : null;
    supervisor.onChange = (app, respawned) => textfile?.supervised(app, respawned);
    windows.onChange = () => textfile?.changed();
    core.receiptStore.onEmitted = (p) => textfile?.receiptSigned(p.outcome);
    // An update, start or stop that ends hands its app back to the supervisor at once. (A first
    // pass does not: the supervisor's own first pass follows the helper's start.)
    // Holds with an expiry (docs/design.md §18): lifted by the helper at their `until`.
    const holdDeps = { clock: core.clock, apps: () => Object.keys(config.apps), lift: (app: string, now: number) => liftExpiredHold(core, app, now) };
    const holdExpiry = new HoldExpiry(holdDeps);
    core.locks.onRelease = (app, work) => {
      if (work.op === 'hold' || work.op === 'release-hold') holdExpiry.poke();
      if (work.op !== 'supervise' && work.op !== 'first-pass') void supervisor.requestPass(`${work.op} of ${app} ended`);
      if (work.op !== 'supervise') textfile?.changed();
      if (work.op !== 'supervise') void liveness.sync();
    };

    // Sockets answer at once; mutating requests get RECOVERING until the start is done.
    let recovering = true;
    core.recovering = () => recovering;
    const dispatch = makeDispatch(makeHandlers(core), { recovering: core.recovering });
    // On trial, the agent's half of the round trip: opened before helper.sock is bound, since
    // the agent confirms once to each new helper, maybe at once.
    const selfCfg = config.apps[SELF_APP];
    const onTrial = selfCfg?.runner === 'self' && core.self?.launched?.decision === 'trial';
    const agentConfirmed = onTrial ? (await expectAgentRoundTrip(core, core.self!.launched!.version)).confirmed : new Promise<void>(() => {});
    servers.push(await startApiServer({ socketPath: paths.adminSock, kind: 'admin', settings: config.api, dispatch, log }));
    servers.push(await startApiServer({ socketPath: paths.helperSock, kind: 'helper', settings: config.api, dispatch, log }));
    await openRunDir(paths.runDir);

    // 2. For each app: validate and recover the journal, re-emit a missing receipt, run the
    // first pass, clean staging.
    await startApps(core, paths, config);
    // A hold that expired while no helper ran is lifted before any request may change the app.
    await liftDueHolds(holdDeps);
    // 3. steward itself (docs/design.md §14): close the last trial; on trial, probe and commit. A
    // failed trial throws: this helper exits unready and the launcher reverts it.
    const self = core.self!;
    if (selfCfg?.runner === 'self') {
      const trial = await readTrialState(paths, process.env);
      await settleTrial(core, {
        trial,
        self,
        probe: () => probeSelf({ paths, clock: core.clock, cfg: selfCfg, trialVersion: trial.launched?.version ?? '', ownVersion: self.ownVersion, agentConfigured: Object.hasOwn(config.apps, AGENT_APP), agentConfirmed }),
      });
    }
    // Ready only now, after a trial's commit (Type=notify); the starts that did not get
    // ready are none again.
    await self.notifyReady();
    const stopWatchdog = self.startWatchdog();
    if (selfCfg?.runner === 'self') await resetStartCounter(paths);
    recovering = false;
    textfile?.changed();
    supervisor.start();
    void supervisor.requestPass('start');
    for (const app of Object.keys(config.apps)) void windows.resume(app).catch((err) => log('watch app=%s: %s', app, (err as Error).message));
    void liveness.sync();
    holdExpiry.start();
    // Processes that ran on while no helper watched get a fresh deadline.
    void watchdogs.resume().catch((err) => log('watchdog resume: %s', (err as Error).message));
    log('ready root=%s pid=%d apps=%s', root || '/', process.pid, Object.keys(config.apps).join(',') || '(none)');

    await new Promise<void>((resolve) => {
      const stop = (sig: string) => {
        log('stopping on %s (apps keep running)', sig);
        self.stop();
        stopWatchdog();
        liveness.close();
        watchdogs.close();
        void holdExpiry.close();
        resolve();
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
    supervisor.close();
    await textfile?.idle();
    return 0;
  } catch (err) {
    // One line on the terminal that says why, whatever DEBUG enables: a helper started in the
    // background is otherwise only an agentctl HELPER_UNREACHABLE. A file system error is the
    // host's (a file where a folder belongs, a read-only mount), not a bug in steward.
    const syscallFailed = (err as NodeJS.ErrnoException | null)?.syscall !== undefined;
    const e = toStewardError(err, syscallFailed ? 'IO_ERROR' : 'INTERNAL', 'cannot start');
    process.stderr.write(`steward-helper: ${e.code}: ${e.message}\n`);
    return 1;
  } finally {
    releaseRunner();
    for (const s of servers) await s.close().catch(() => {});
    await lock?.release().catch(() => {});
  }
}
