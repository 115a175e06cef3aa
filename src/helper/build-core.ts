import type { HostConfig } from '../core/config-schema.js';
import { StewardError } from '../core/errors.js';
import type { HostPaths } from '../core/paths.js';
import type { UpdateAnswer } from '../protocol/schemas.js';
import { systemClock } from '../platform/clock.js';
import { faultsFromEnv } from '../platform/faults.js';
import { logger } from '../platform/log.js';
import { systemdAvailable } from '../platform/systemd.js';
import { lookupGroup, lookupUser } from '../platform/users.js';
import { AppLocks } from './app-locks.js';
import type { HelperCore } from './handlers.js';
import { loadOrCreateHelperKey } from '../host/helper-key.js';
import { readNodeId } from '../host/node-id.js';
import { AGENT_APP } from '../core/name-checks.js';
import { AgentConfirms } from './update/agent-confirm.js';
import { readCurrent } from './release-store.js';
import { readAcceptedReceiptVersions } from './receipts/read-accepts.js';
import { readRelayedSeq } from './receipts/read-relay-mark.js';
import { ReceiptStore } from './receipts/receipt-store.js';
import { findCgroupHome } from './runners/app-cgroup.js';
import { findMemoryHome } from './runners/memory-cgroup.js';
import { createProcessRunner } from './runners/process-runner.js';
import { SocketKeepers, withSocketKeepers } from './sockets/keeper-client.js';
import type { AppRunner, RunAs } from './runners/runner.js';
import { createSystemdRunner } from './runners/systemd-runner.js';
import { withSocketSides } from './runners/systemd-socket-sides.js';
import { systemdUnits } from './runners/unit-runner.js';
import { realStageIO } from './stage/real-stage-io.js';
import { Attempts } from './update/attempts.js';
import { probeRelease } from './update/probe.js';
import { selfSeams } from './self/self-seams.js';
import { launchedBy } from './self/trial-state.js';
import { readOwnVersion } from '../platform/own-version.js';

const log = logger('helper:main');

// Builds the real adapters of one helper (its composition root, shared by main and the
// crash explorer's start driver, test/crash/run-start.ts).
// `stopping`: aborted when the helper stops (stage-release.ts: fetch retries end).
export async function buildCore(paths: HostPaths, config: HostConfig, isRoot: boolean, stopping?: AbortSignal): Promise<HelperCore> {
  const key = await loadOrCreateHelperKey(paths);
  const faults = faultsFromEnv(process.env, paths.root);
  const receiptStore = new ReceiptStore({
    paths,
    clock: systemClock,
    signer: { privateKey: key.privateKey, keyId: key.keyId },
    nodeId: () => readNodeId(paths),
    faults,
    knownApp: (app) => Object.hasOwn(config.apps, app),
    relayedSeq: () => readRelayedSeq(paths, key.keyId),
    acceptedVersions: async () => {
      if (!Object.hasOwn(config.apps, AGENT_APP)) return readAcceptedReceiptVersions(paths);
      const current = await readCurrent(paths, AGENT_APP).catch(() => null);
      return readAcceptedReceiptVersions(paths, current?.state === 'valid' ? current.version : '');
    },
    logTail: (app) => config.apps[app]?.logTail ?? config.logTail,
  });
  return {
    paths,
    config,
    clock: systemClock,
    io: realStageIO,
    runner: await chooseProcessRunner(paths, isRoot, config.supervisor.processRunner),
    units: systemdUnits,
    receipts: receiptStore,
    receiptStore,
    faults,
    locks: new AppLocks(),
    probe: probeRelease,
    agentConfirms: new AgentConfirms(systemClock),
    runAs: (app) => runAsFor(config, app, isRoot),
    blockedInMemory: new Map(),
    lastTransfers: new Map(),
    stopTimeoutMs: 10_000,
    attempts: new Attempts<UpdateAnswer>(),
    startedAt: systemClock.now(),
    recovering: () => true,
    self: selfSeams(process.env, paths.root, readOwnVersion(), launchedBy(process.env)),
    ...(stopping ? { stopping } : {}),
  };
}

// The `process` runner (docs/design.md §5): each app its own transient unit when PID 1 is systemd and
// the helper is root, else a detached child with its output in /var/log/steward/<app>.log.
async function chooseProcessRunner(paths: HostPaths, isRoot: boolean, choice: HostConfig['supervisor']['processRunner']): Promise<AppRunner> {
  const systemd = choice === 'systemd' || (choice === 'auto' && isRoot && (await systemdAvailable().catch(() => false)));
  if (systemd) {
    if (!isRoot || !(await systemdAvailable().catch(() => false))) {
      throw new StewardError('CONFIG_INVALID', 'supervisor.processRunner is "systemd" but systemd is not PID 1 or the helper is not root');
    }
    log('process runner=systemd: each app runs as its own unit steward-app-<app>.service, output in the journal');
    // Apps with `sockets`: socket units and two sides of a unit template (docs/design.md §17 "Under systemd").
    return withSocketSides(createSystemdRunner({ clock: systemClock, isRoot }), { clock: systemClock, isRoot, rootPrefix: paths.root });
  }
  log('process runner=detached (%s): apps run as detached children with a log file', choice === 'detached' ? 'configured' : isRoot ? 'systemd is not PID 1' : 'systemd needs root');
  const cgroups = findCgroupHome(paths.root);
  log(cgroups ? 'each app runs in its own cgroup under %s' : 'no cgroup of their own for apps here%s: the instance token tells their processes apart', cgroups?.dir ?? '');
  const memory = findMemoryHome(paths.root, cgroups);
  log(typeof memory === 'string' ? 'no memory cgroups for apps here (%s): an app with a memoryMax is refused its start' : 'apps with a memoryMax get a cgroup v%s memory limit', typeof memory === 'string' ? memory : memory.kind.slice(1));
  const runner = createProcessRunner({ clock: systemClock, isRoot, cgroups, memory });
  // Apps with `sockets` are started by their socket keeper (docs/design.md §17 "Zero-downtime handover").
  return withSocketKeepers(runner, new SocketKeepers({ paths, isAlive: (id) => runner.isAlive(id) }));
}

// The account a process app runs as: its configured user and group as root, else the helper's.
export async function runAsFor(config: HostConfig, app: string, isRoot: boolean): Promise<RunAs | null> {
  const cfg = config.apps[app];
  if (!isRoot || !cfg || cfg.runner !== 'process' || !cfg.user || !cfg.group) return null;
  // Every start (a respawn's included) waits on this: both files are read synchronously (users.ts).
  const [u, g] = await Promise.all([lookupUser(cfg.user), lookupGroup(cfg.group)]);
  if (!u || !g || u.uid === 0 || g.gid === 0) {
    throw new StewardError('CONFIG_INVALID', `apps.${app}: user ${cfg.user} / group ${cfg.group} cannot run the app`);
  }
  return { name: u.name, uid: u.uid, gid: g.gid, home: u.home };
}
