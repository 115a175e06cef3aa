import { Command } from 'commander';
import { StewardError, toStewardError } from '../core/errors.js';
import type { HostConfig } from '../core/config-schema.js';
import { hostPaths, type HostPaths } from '../core/paths.js';
import type { UpdateAnswer } from '../protocol/schemas.js';
import { systemClock } from '../platform/clock.js';
import { faultsFromEnv } from '../platform/faults.js';
import { enableDefaultLogs, logger } from '../platform/log.js';
import { acquireHelperLock, type HelperLock } from '../platform/lock.js';
import { resolveRootPrefix } from '../platform/root-prefix.js';
import { lookupGroup, lookupUser, systemAccounts } from '../platform/users.js';
import { AppLocks } from './app-locks.js';
import { loadHostConfig } from './config.js';
import { makeHandlers, type HelperCore } from './handlers.js';
import { ensureLayout } from './layout.js';
import { loadOrCreateHelperKey } from './receipts/helper-key.js';
import { readNodeId } from './receipts/node-id.js';
import { ReceiptStore } from './receipts/receipt-store.js';
import { createProcessRunner } from './runners/process-runner.js';
import type { AppRunner, RunAs } from './runners/runner.js';
import { createSystemdRunner, systemdAvailable } from './runners/systemd-runner.js';
import { realStageIO } from './stage/real-stage-io.js';
import { makeDispatch } from './server/dispatch.js';
import { startApiServer, type ApiServer } from './server/api-server.js';
import { openRunDir, prepareRunDir } from './server/bind-sockets.js';
import { cleanStaleStaging } from './start-cleanup.js';
import { Attempts } from './update/attempts.js';
import { ensureRunning } from './update/first-pass.js';
import { probeRelease } from './update/probe.js';
import { recoverApp } from './update/recover.js';
import { systemdUnits } from './runners/unit-runner.js';
import { Supervisor } from './supervisor/supervisor.js';

const log = logger('helper:main');

// steward-helper [--root DIR] [--config FILE]: the root helper, in the foreground.
export async function main(argv: string[]): Promise<number> {
  enableDefaultLogs();
  const program = new Command('steward-helper')
    .option('--root <dir>', 'root prefix of the host layout (tests, demos)')
    .option('--config <file>', 'host config (default <root>/etc/steward/steward.json)')
    .exitOverride();
  try {
    program.parse(argv, { from: 'user' });
  } catch {
    return 2;
  }
  const opts = program.opts<{ root?: string; config?: string }>();
  const isRoot = process.getuid?.() === 0;
  let lock: HelperLock | null = null;
  const servers: ApiServer[] = [];
  try {
    const root = await resolveRootPrefix({ flag: opts.root, env: process.env.STEWARD_ROOT, isRoot });
    const paths = hostPaths(root);
    const config = await loadHostConfig(opts.config ?? paths.configFile, { isRoot, accounts: systemAccounts });
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
    const supervisor = new Supervisor(core, config.supervisor);
    core.onStarted = (app, proc) => supervisor.watch(app, proc);
    // An update, start or stop that ends hands its app back to the supervisor at once.
    core.locks.onRelease = (app, work) => {
      if (work.op !== 'supervise') void supervisor.requestPass(`${work.op} of ${app} ended`);
    };

    // Sockets answer at once; mutating requests get RECOVERING until the start is done.
    let recovering = true;
    core.recovering = () => recovering;
    const dispatch = makeDispatch(makeHandlers(core), { recovering: core.recovering });
    servers.push(await startApiServer({ socketPath: paths.adminSock, kind: 'admin', settings: config.api, dispatch, log }));
    servers.push(await startApiServer({ socketPath: paths.helperSock, kind: 'helper', settings: config.api, dispatch, log }));
    await openRunDir(paths.runDir);

    // 2. For each app: validate and recover the journal, re-emit a missing receipt, run the
    // first pass, clean staging. One app's trouble never stops the others.
    for (const app of Object.keys(config.apps).sort()) {
      try {
        const r = await recoverApp(core, app);
        if (r.action !== 'none') log('start app=%s %s', app, JSON.stringify(r));
        await ensureRunning(core, app);
        await cleanStaleStaging(paths, app);
      } catch (err) {
        log('start of app=%s failed: %s', app, (err as Error).message);
      }
    }
    recovering = false;
    supervisor.start();
    void supervisor.requestPass('start');
    log('ready root=%s pid=%d apps=%s', root || '/', process.pid, Object.keys(config.apps).join(',') || '(none)');

    await new Promise<void>((resolve) => {
      const stop = (sig: string) => {
        log('stopping on %s (apps keep running)', sig);
        resolve();
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
    supervisor.close();
    return 0;
  } catch (err) {
    const e = err instanceof StewardError ? err : toStewardError(err, 'INTERNAL');
    process.stderr.write(`steward-helper: ${e.code}: ${e.message}\n`);
    return 1;
  } finally {
    for (const s of servers) await s.close().catch(() => {});
    await lock?.release().catch(() => {});
  }
}

// Builds the real adapters of one helper.
async function buildCore(paths: HostPaths, config: HostConfig, isRoot: boolean): Promise<HelperCore> {
  const key = await loadOrCreateHelperKey(paths);
  const faults = faultsFromEnv(process.env, paths.root);
  const receiptStore = new ReceiptStore({
    paths,
    clock: systemClock,
    signer: { privateKey: key.privateKey, keyId: key.keyId },
    nodeId: () => readNodeId(paths),
    faults,
  });
  return {
    paths,
    config,
    clock: systemClock,
    io: realStageIO,
    runner: await chooseProcessRunner(isRoot, config.supervisor.processRunner),
    units: systemdUnits,
    receipts: receiptStore,
    receiptStore,
    faults,
    locks: new AppLocks(),
    probe: probeRelease,
    runAs: (app) => runAsFor(config, app, isRoot),
    blockedInMemory: new Map(),
    stopTimeoutMs: 10_000,
    attempts: new Attempts<UpdateAnswer>(),
    startedAt: systemClock.now(),
    recovering: () => true,
  };
}

// The `process` runner (DESIGN §5): each app its own transient unit when PID 1 is systemd and
// the helper is root, else a detached child with its output in /var/log/steward/<app>.log.
async function chooseProcessRunner(isRoot: boolean, choice: HostConfig['supervisor']['processRunner']): Promise<AppRunner> {
  const systemd = choice === 'systemd' || (choice === 'auto' && isRoot && (await systemdAvailable().catch(() => false)));
  if (systemd) {
    if (!isRoot || !(await systemdAvailable().catch(() => false))) {
      throw new StewardError('CONFIG_INVALID', 'supervisor.processRunner is "systemd" but systemd is not PID 1 or the helper is not root');
    }
    log('process runner=systemd: each app runs as its own unit steward-app-<app>.service, output in the journal');
    return createSystemdRunner({ clock: systemClock, isRoot });
  }
  log('process runner=detached (%s): apps run as detached children with a log file', choice === 'detached' ? 'configured' : isRoot ? 'systemd is not PID 1' : 'systemd needs root');
  return createProcessRunner({ clock: systemClock, isRoot });
}

// The account a process app runs as: its configured user and group as root, else the helper's.
async function runAsFor(config: HostConfig, app: string, isRoot: boolean): Promise<RunAs | null> {
  const cfg = config.apps[app];
  if (!isRoot || !cfg || cfg.runner !== 'process' || !cfg.user || !cfg.group) return null;
  const u = await lookupUser(cfg.user);
  const g = await lookupGroup(cfg.group);
  if (!u || !g || u.uid === 0 || g.gid === 0) {
    throw new StewardError('CONFIG_INVALID', `apps.${app}: user ${cfg.user} / group ${cfg.group} cannot run the app`);
  }
  return { name: u.name, uid: u.uid, gid: g.gid, home: u.home };
}
