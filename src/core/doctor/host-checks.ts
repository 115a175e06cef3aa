// The pure checks of `agentctl doctor` besides permissions: each takes observations and returns
// results; none does I/O. Thresholds are exported so the tests and the docs name the same numbers.
import { fail, octal, ok, warn, type CheckResult } from './check-result.js';
import { controlPlaneUrls, sameControlPlaneUrl } from '../control-plane-urls.js';
import type {
  CaFileObservation, ConfigObservation, ControlPlaneProbe, ControlPlanesObservation, DiskObservation, Entry, KeysObservation, NtpObservation, Owners, SelfObservation, SkewObservation, SocketsObservation, UnitsObservation,
} from './observations.js';

// The control planes the agent talks to, as steward-agent picks them: the host config's
// controlPlane, else the URLs the node enrolled with (control-plane.json, else enrollment.json;
// no caFile then, as for the agent). `from` names that file. Null: neither.
export function controlPlaneOf(
  config: ConfigObservation,
  keys: Pick<KeysObservation, 'enrollment' | 'enrollmentFile' | 'controlPlane' | 'controlPlaneFile'>,
): { settings: { urls: string[]; caFile?: string | undefined; insecure?: boolean | undefined }; from?: string } | null {
  if (config.ok && config.controlPlane) {
    const { url, ...rest } = config.controlPlane;
    return { settings: { urls: controlPlaneUrls(url), ...rest } };
  }
  if (keys.enrollment.state !== 'ok') return null;
  const listed = keys.controlPlane.state === 'ok' ? keys.controlPlane.urls : undefined;
  if (listed) return { settings: { urls: [...listed] }, from: keys.controlPlaneFile };
  return { settings: { urls: [keys.enrollment.controlPlaneUrl] }, from: keys.enrollmentFile };
}

export const HELPER_UNIT = 'steward-helper.service';
export const AGENT_UNIT = 'steward-agent.service';

// The heartbeat's CLOCK_SKEW window is ±5 min (docs/design.md §6): beyond it every heartbeat is refused.
export const SKEW_WARN_MS = 60_000;
export const SKEW_FAIL_MS = 5 * 60_000;

export const GIB = 1024 ** 3;
export const MIB = 1024 ** 2;
// Disk: warn below 1 GiB or 10 % free; fail below the fetch reserve plus 100 MiB, where the
// helper would refuse (DISK_FULL) any release bigger than a few MiB.
export const DISK_WARN_BYTES = GIB;
export const DISK_WARN_FRACTION = 0.1;
export const DISK_FAIL_MARGIN_BYTES = 100 * MIB;

// units: steward-helper must be active; steward-agent too once the node is enrolled.
export function checkUnits(obs: UnitsObservation, enrolled: boolean): CheckResult[] {
  if (obs.kind === 'skipped') return [warn('units', `skipped: ${obs.why}`)];
  if (obs.kind === 'no-systemd') return [warn('units', `not under systemd: ${obs.why}`)];
  return obs.units.map((u) => {
    const name = `unit ${u.name}`;
    if (u.activeState === 'active') return ok(name, 'active');
    if (u.name === AGENT_UNIT && !enrolled) return warn(name, `${u.activeState}; this node is not enrolled yet (agentctl enroll)`);
    return fail(name, `${u.activeState}, expected active (systemctl status ${u.name})`);
  });
}

function socketProblem(e: Entry | null, file: string, mode: number, withGroup: boolean, owners: Owners): string | null {
  if (!e) return `${file} does not exist (is steward-helper running?)`;
  const problems: string[] = [];
  if (e.type !== 'socket') problems.push(`is a ${e.type}, expected a socket`);
  if (e.uid !== owners.rootUid) problems.push(`owner uid ${e.uid}, expected uid ${owners.rootUid}`);
  if (withGroup && owners.stewardGid !== null && e.gid !== owners.stewardGid) problems.push(`group gid ${e.gid}, expected steward (gid ${owners.stewardGid})`);
  if (e.mode !== mode) problems.push(`mode ${octal(e.mode)}, expected ${octal(mode)}`);
  return problems.length ? `${file}: ${problems.join(', ')}` : null;
}

// helper socket: both sockets with their owners and modes, and `status` answering.
export function checkSockets(obs: SocketsObservation, files: { helperSock: string; adminSock: string }, owners: Owners): CheckResult[] {
  const h = socketProblem(obs.helperSock, files.helperSock, 0o660, true, owners);
  const a = socketProblem(obs.adminSock, files.adminSock, 0o600, false, owners);
  const owner = owners.note ? `uid ${owners.rootUid}` : 'root';
  const group = owners.stewardGid === null ? '' : ':steward';
  return [
    h ? fail('helper.sock', h) : ok('helper.sock', `${files.helperSock} socket 0660 ${owner}${group}`),
    a ? fail('admin.sock', a) : ok('admin.sock', `${files.adminSock} socket 0600 ${owner}`),
    obs.status.ok
      ? ok('helper status', `steward-helper pid ${obs.status.pid} answers over ${obs.status.socket}${obs.status.recovering ? ' (still recovering)' : ''}`)
      : fail('helper status', `no answer: ${obs.status.error}`),
    ...(obs.status.ok && obs.status.self ? [checkSelf(obs.status.self)] : []),
  ];
}

// The app steward: the helper runs the version the host is meant to run. A package trial that
// reverted (an older steward runs than dpkg installed) or a fallback fails.
export function checkSelf(s: SelfObservation): CheckResult {
  const how = s.decision ? ` (${s.decision})` : '';
  if (s.packageReverted) return fail('steward version', s.packageReverted);
  if (s.fallback) return fail('steward version', s.fallback);
  return ok('steward version', `steward-helper runs steward ${s.version}${how}`);
}

// keys: the helper key pair, the trusted release keys, and the enrollment's nodeId.
export function checkKeys(obs: KeysObservation): CheckResult[] {
  const out: CheckResult[] = [];
  const k = obs.helperKey;
  const p = obs.helperPub;
  if (k.state === 'missing') out.push(fail('helper key', `${obs.helperKeyFile} does not exist (steward-helper makes it at its start)`));
  else if (k.state === 'invalid') out.push(fail('helper key', `${obs.helperKeyFile}: ${k.error}`));
  else if (p.state === 'missing') out.push(fail('helper key', `${obs.helperPubFile} does not exist, expected the public half of ${obs.helperKeyFile}`));
  else if (p.state === 'invalid') out.push(fail('helper key', `${obs.helperPubFile}: ${p.error}`));
  else if (p.rawPublicKey !== k.rawPublicKey) out.push(fail('helper key', `${obs.helperPubFile} does not match ${obs.helperKeyFile} (restarting steward-helper rewrites it)`));
  else out.push(ok('helper key', `${obs.helperKeyFile} is Ed25519 and matches helper.pub`));

  const bad = obs.trustedKeys.filter((t) => t.error !== null);
  for (const t of bad) out.push(fail('trusted keys', `${t.file}: ${t.error}; the helper ignores it`));
  if (bad.length === 0) {
    if (obs.trustedKeys.length === 0 && obs.tufRoot) out.push(ok('trusted keys', "none, and none needed for the agent's updates: this host trusts a TUF root (docs/trust.md); only an update over admin.sock asks for a release key"));
    else if (obs.trustedKeys.length === 0) out.push(warn('trusted keys', 'no trusted release keys: signed updates will be refused (SIGNATURE_INVALID)'));
    else out.push(ok('trusted keys', `${obs.trustedKeys.length} Ed25519 key(s) parse and pass the trust rule`));
  }
  out.push(checkEnrollment(obs));
  return out;
}

function checkEnrollment(obs: KeysObservation): CheckResult {
  const n = obs.nodeState;
  const e = obs.enrollment;
  if (n.state === 'invalid') return fail('enrollment', `${obs.nodeStateFile}: ${n.error}`);
  if (e.state === 'invalid') return fail('enrollment', `${obs.enrollmentFile}: ${e.error}`);
  if (n.state === 'missing' && e.state === 'missing') return warn('enrollment', 'not enrolled yet (agentctl enroll --control-plane URL --token T)');
  if (n.state === 'missing') return fail('enrollment', `${obs.nodeStateFile} does not exist but ${obs.enrollmentFile} names node ${(e as { nodeId: string }).nodeId}`);
  if (e.state === 'missing') return fail('enrollment', `${obs.enrollmentFile} does not exist but ${obs.nodeStateFile} names node ${n.nodeId}`);
  if (n.nodeId !== e.nodeId) return fail('enrollment', `${obs.nodeStateFile} names node ${n.nodeId} but ${obs.enrollmentFile} names ${e.nodeId}`);
  return ok('enrollment', `node ${n.nodeId}`);
}

// config: the host config loads as the helper would load it.
export function checkConfig(obs: ConfigObservation): CheckResult {
  if (!obs.ok) return fail('config', obs.error);
  if (obs.apps.length === 0) return warn('config', `${obs.file} loads but names no apps`);
  return ok('config', `${obs.file}: ${obs.apps.map((a) => `${a.name} (${a.runner})`).join(', ')}`);
}

// ca file: each CA file the host config names passes the trust rule (the helper refuses to fetch
// with one that does not: CONFIG_INVALID). Nothing to say when none is named.
export function checkCaFiles(obs: readonly CaFileObservation[]): CheckResult[] {
  return obs.map((c) => {
    if (c.state === 'ok') return ok('ca file', `${c.setting} ${c.file} passes the trust rule`);
    if (c.state === 'missing') return fail('ca file', `${c.setting} ${c.file} does not exist`);
    return fail('ca file', `${c.setting} ${c.file} is not trusted: ${c.why}`);
  });
}

function minutes(ms: number): string {
  return `${(Math.abs(ms) / 60_000).toFixed(1)} min`;
}

// clock: NTP synchronization, and the skew against the control plane (warn over 1 min, fail over 5).
export function checkClock(ntp: NtpObservation, skew: SkewObservation): CheckResult[] {
  const out: CheckResult[] = [];
  if (ntp.state === 'synced') out.push(ok('clock ntp', 'NTPSynchronized=yes'));
  else if (ntp.state === 'not-synced') out.push(warn('clock ntp', 'NTPSynchronized=no: the system clock is not synchronized'));
  else out.push(warn('clock ntp', `cannot tell: ${ntp.why}`));
  if (skew.state === 'no-control-plane') {
    out.push(ok('clock skew', 'no control plane configured (host config) or enrolled (agentctl enroll)'));
    return out;
  }
  const cp = `the control plane ${skew.url}${skew.from ? ` (enrolled in ${skew.from})` : ''}`;
  if (skew.state === 'unreachable') out.push(warn('clock skew', `cannot reach ${cp}: ${skew.why}`));
  else {
    const side = skew.skewMs > 0 ? 'behind' : 'ahead of';
    const text = `this host is ${minutes(skew.skewMs)} ${side} ${cp}`;
    const abs = Math.abs(skew.skewMs);
    if (abs > SKEW_FAIL_MS) out.push(fail('clock skew', `${text}: over 5 min, heartbeats are refused (CLOCK_SKEW)`));
    else if (abs > SKEW_WARN_MS) out.push(warn('clock skew', `${text}: over 1 min`));
    else out.push(ok('clock skew', `${text}`));
  }
  return out;
}

// Whether a probe had an answer from a live control plane: any status below 500 (the agent moves
// on to the next URL after a 5xx, as after no answer).
function answers(p: ControlPlaneProbe): boolean {
  return p.status !== undefined && p.status < 500;
}

// control plane: each URL the agent may heartbeat to answers; a down one warns, and only when
// none answers does the check fail (the agent cannot heartbeat at all).
export function checkControlPlanes(obs: ControlPlanesObservation): CheckResult {
  if (obs.state === 'none') return ok('control plane', 'none configured (host config) or enrolled (agentctl enroll)');
  const from = obs.from ? ` (enrolled in ${obs.from})` : '';
  const said = (p: ControlPlaneProbe) => {
    if (answers(p)) return `${p.url} answers (HTTP ${p.status})`;
    return `${p.url}: ${p.status !== undefined ? `HTTP ${p.status}` : p.state === 'unreachable' ? p.why : 'no answer'}`;
  };
  const on = obs.answered ? `; the agent is on ${obs.answered.url}, the last URL that answered it (since ${new Date(obs.answered.since).toISOString()})` : '';
  const record = obs.recordError ? `; ${obs.recordError} (the agent ignores it)` : '';
  const up = obs.probes.filter(answers);
  const detail = `${obs.probes.map(said).join('; ')}${from}${on}${record}`;
  if (up.length === 0) return fail('control plane', `${obs.probes.length === 1 ? 'the control plane does not answer' : `none of the ${obs.probes.length} control plane URLs answers`}: ${detail}`);
  if (up.length < obs.probes.length) return warn('control plane', `${obs.probes.length - up.length} of ${obs.probes.length} control plane URLs do not answer: ${detail}`);
  return record ? warn('control plane', detail) : ok('control plane', detail);
}

// The probe the clock is judged by: the URL the agent is on when it gave a time, else
// the first that did (one that answers below 500 first), else the first URL's failure.
export function skewOf(obs: ControlPlanesObservation): SkewObservation {
  if (obs.state === 'none') return { state: 'no-control-plane' };
  const timed = obs.probes.filter((p) => p.state === 'measured');
  const measured = [...timed.filter(answers), ...timed.filter((p) => !answers(p))];
  const chosen = measured.find((p) => obs.answered !== undefined && sameControlPlaneUrl(p.url, obs.answered.url)) ?? measured[0] ?? obs.probes[0];
  if (!chosen) return { state: 'no-control-plane' };
  return obs.from ? { ...chosen, from: obs.from } : chosen;
}

function gib(bytes: number): string {
  return bytes >= GIB ? `${(bytes / GIB).toFixed(1)} GiB` : `${(bytes / MIB).toFixed(0)} MiB`;
}

// disk: free space for releases and state.
export function checkDisk(obs: DiskObservation, reserveBytes: number): CheckResult {
  const name = `disk ${obs.label}`;
  if (!obs.space.ok) return warn(name, `cannot tell the free space of ${obs.dir}: ${obs.space.error}`);
  const { freeBytes, totalBytes } = obs.space;
  const pct = totalBytes > 0 ? (freeBytes / totalBytes) * 100 : 0;
  const text = `${gib(freeBytes)} free of ${gib(totalBytes)} (${pct.toFixed(0)} %) on ${obs.dir}`;
  const failBelow = reserveBytes + DISK_FAIL_MARGIN_BYTES;
  if (freeBytes < failBelow) return fail(name, `${text}: below ${gib(failBelow)} (the fetch reserve plus 100 MiB), updates will be refused`);
  if (freeBytes < DISK_WARN_BYTES || freeBytes < totalBytes * DISK_WARN_FRACTION) return warn(name, `${text}: below 1 GiB or 10 %`);
  return ok(name, text);
}
