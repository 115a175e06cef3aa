// `agentctl doctor`'s composition: gather observations with the real adapters, then judge them
// with the pure checks of src/core/doctor/.
import path from 'node:path';
import type { CheckResult } from '../../core/doctor/check-result.js';
import { checkCaFiles, checkClock, checkConfig, checkDisk, checkKeys, checkSockets, checkUnits, controlPlaneOf } from '../../core/doctor/host-checks.js';
import { layoutRules } from '../../core/doctor/layout-rules.js';
import type { Entry, SocketsObservation } from '../../core/doctor/observations.js';
import { checkPermissions } from '../../core/doctor/permission-checks.js';
import type { HostPaths } from '../../core/paths.js';
import { callHelper, pickSocket } from '../../protocol/client.js';
import { helperClient } from '../../protocol/helper-client.js';
import { probeControlPlaneClock } from './control-plane-clock.js';
import { gatherAncestors, gatherOwners, lstatEntry, readByRoot, walkTrees } from './gather-files.js';
import { gatherCaFiles, gatherConfig, gatherDisk, gatherKeys, gatherNtp, gatherUnits, helperTrustScope } from './gather-host.js';

const STATUS_TIMEOUT_MS = 5_000;

async function gatherSockets(paths: HostPaths, socket?: string): Promise<SocketsObservation> {
  const chosen = await pickSocket(paths, socket);
  let status: SocketsObservation['status'];
  try {
    const r = await helperClient((request, o) => callHelper(chosen.path, request, o)).status({}, { timeoutMs: STATUS_TIMEOUT_MS });
    status = { ok: true, socket: chosen.path, pid: r.pid, recovering: r.recovering };
  } catch (err) {
    status = { ok: false, error: (err as Error).message };
  }
  return { helperSock: await lstatEntry(paths.helperSock), adminSock: await lstatEntry(paths.adminSock), status };
}

// Runs every check against the host at `paths`; the order is the output's.
export async function runDoctor(paths: HostPaths, opts: { socket?: string } = {}): Promise<CheckResult[]> {
  const owners = await gatherOwners(paths);
  const roots = readByRoot(paths);
  const [keys, config, sockets, units, ntp, walk, disk] = await Promise.all([
    gatherKeys(paths),
    gatherConfig(paths),
    gatherSockets(paths, opts.socket),
    gatherUnits(paths),
    gatherNtp(),
    walkTrees(roots),
    gatherDisk(paths),
  ]);
  const extra = (await Promise.all([paths.runDir, paths.agentDir, path.join(paths.agentDir, 'node.key')].map((p) => lstatEntry(p).catch(() => null)))).filter(
    (e): e is Entry => e !== null,
  );
  const ancestors = await gatherAncestors(paths, roots);
  const caFiles = await gatherCaFiles(paths, config);
  const cp = controlPlaneOf(config, keys);
  const caFile = cp?.settings.caFile;
  const skew = cp
    ? { ...(await probeControlPlaneClock(cp.settings, { caTrust: caFile ? helperTrustScope(paths, path.dirname(caFile)) : undefined })), ...(cp.from ? { from: cp.from } : {}) }
    : ({ state: 'no-control-plane' } as const);
  const enrolled = keys.nodeState.state === 'ok';
  const reserve = config.ok ? config.diskReserveBytes : 10 * 1024 * 1024;
  return [
    ...checkUnits(units, enrolled),
    ...checkSockets(sockets, paths, owners),
    ...checkPermissions(walk, extra, layoutRules(paths), owners, ancestors),
    ...checkKeys(keys),
    checkConfig(config),
    ...checkCaFiles(caFiles),
    ...checkClock(ntp, skew),
    ...disk.map((d) => checkDisk(d, reserve)),
  ];
}
