// `agentctl doctor`'s composition: gather observations with the real adapters, then judge them
// with the pure checks of src/core/doctor/.
import path from 'node:path';
import type { CheckResult } from '../../core/doctor/check-result.js';
import { checkCaFiles, checkClock, checkConfig, checkControlPlanes, checkDisk, checkKeys, checkSockets, checkUnits, controlPlaneOf, skewOf } from '../../core/doctor/host-checks.js';
import { sameControlPlaneUrl } from '../../core/control-plane-urls.js';
import { layoutRules } from '../../core/doctor/layout-rules.js';
import type { ConfigObservation, ControlPlanesObservation, Entry, KeysObservation, SocketsObservation } from '../../core/doctor/observations.js';
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
    const self = r.apps.find((a) => a.self)?.self;
    status = {
      ok: true,
      socket: chosen.path,
      pid: r.pid,
      recovering: r.recovering,
      ...(self ? { self: { version: self.version, decision: self.decision, fallback: self.fallback?.message ?? null, packageReverted: self.packageReverted?.message ?? null } } : {}),
    };
  } catch (err) {
    status = { ok: false, error: (err as Error).message };
  }
  return { helperSock: await lstatEntry(paths.helperSock), adminSock: await lstatEntry(paths.adminSock), status };
}

// Probes every control-plane URL the agent may use, at once (each within the probe's 5 s).
async function gatherControlPlanes(paths: HostPaths, config: ConfigObservation, keys: KeysObservation): Promise<ControlPlanesObservation> {
  const cp = controlPlaneOf(config, keys);
  if (!cp) return { state: 'none' };
  const { urls, caFile, insecure } = cp.settings;
  const caTrust = caFile ? helperTrustScope(paths, path.dirname(caFile)) : undefined;
  const probes = await Promise.all(urls.map((url) => probeControlPlaneClock({ url, caFile, insecure }, { caTrust })));
  const record = keys.controlPlane;
  // The URL the agent starts from only when it is one of these (else it starts from the first).
  const last = record.state === 'ok' ? record.answered : undefined;
  const answered = last && urls.some((u) => sameControlPlaneUrl(u, last.url)) ? last : undefined;
  return {
    state: 'probed',
    probes,
    ...(cp.from ? { from: cp.from } : {}),
    ...(answered ? { answered } : {}),
    // Only when enrollment.json next to it reads: else doctor cannot read the agent's folder at all
    // (not root), which the enrollment check says.
    ...(record.state === 'invalid' && keys.enrollment.state === 'ok' ? { recordError: `${keys.controlPlaneFile}: ${record.error}` } : {}),
  };
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
  const controlPlanes = await gatherControlPlanes(paths, config, keys);
  const enrolled = keys.nodeState.state === 'ok';
  const reserve = config.ok ? config.diskReserveBytes : 10 * 1024 * 1024;
  return [
    ...checkUnits(units, enrolled),
    ...checkSockets(sockets, paths, owners),
    ...checkPermissions(walk, extra, layoutRules(paths), owners, ancestors),
    ...checkKeys(keys),
    checkConfig(config),
    ...checkCaFiles(caFiles),
    checkControlPlanes(controlPlanes),
    ...checkClock(ntp, skewOf(controlPlanes)),
    ...disk.map((d) => checkDisk(d, reserve)),
  ];
}
