// The rest of doctor's gathering: systemd, timedatectl, the helper's socket, keys, config and
// disk. Each function turns every failure into an observation; none throws.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { AGENT_UNIT, HELPER_UNIT } from '../../core/doctor/host-checks.js';
import type { CaFileObservation, ConfigObservation, DiskObservation, KeyFile, KeysObservation, NtpObservation, UnitsObservation } from '../../core/doctor/observations.js';
import type { HostPaths } from '../../core/paths.js';
import { agentFiles, readControlPlaneFile, readEnrollment } from '../../agent/agent-files.js';
import { loadHostConfig } from '../../host/config.js';
import { readNodeId } from '../../host/node-id.js';
import { diskSpace } from '../../platform/disk.js';
import { readRegularFile } from '../../platform/fs-atomic.js';
import { loadTrustedKeys, parsePrivateKey, parsePublicKey, rawPublicKey } from '../../platform/keys.js';
import { systemdAvailable } from '../../platform/systemd.js';
import { readTrustedFile, trustScope, type TrustScope } from '../../platform/trusted-file.js';
import { lookupGroup, lookupUser } from '../../platform/users.js';

const TOOL_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' };
const TOOL_TIMEOUT_MS = 10_000;

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function run(cmd: string, args: string[]): Promise<{ stdout: string; missing: boolean; failed: boolean; why: string }> {
  const r = await execa(cmd, args, { extendEnv: false, env: TOOL_ENV, stdin: 'ignore', reject: false, timeout: TOOL_TIMEOUT_MS });
  const missing = (r as { code?: string }).code === 'ENOENT';
  return { stdout: String(r.stdout ?? '').trim(), missing, failed: r.failed, why: String(r.stderr || r.shortMessage || '').trim().split('\n')[0] ?? '' };
}

// The units' ActiveState; skipped under a root prefix (its units are the real host's).
export async function gatherUnits(paths: HostPaths): Promise<UnitsObservation> {
  if (paths.root) return { kind: 'skipped', why: `under the root prefix ${paths.root} there are no units to check` };
  if (!(await systemdAvailable())) return { kind: 'no-systemd', why: 'PID 1 is not systemd or systemctl is missing' };
  const units = [];
  for (const name of [HELPER_UNIT, AGENT_UNIT]) {
    // is-active exits non-zero for anything but active; its stdout is the state either way.
    const r = await run('systemctl', ['is-active', '--', name]);
    units.push({ name, activeState: r.stdout || r.why || 'unknown' });
  }
  return { kind: 'observed', units };
}

// `timedatectl show -p NTPSynchronized --value`.
export async function gatherNtp(): Promise<NtpObservation> {
  try {
    const r = await run('timedatectl', ['show', '-p', 'NTPSynchronized', '--value']);
    if (r.missing) return { state: 'unavailable', why: 'timedatectl is not installed' };
    if (r.stdout === 'yes') return { state: 'synced' };
    if (r.stdout === 'no') return { state: 'not-synced' };
    return { state: 'unavailable', why: `timedatectl answered ${JSON.stringify(r.stdout)}${r.why ? `: ${r.why}` : ''}` };
  } catch (err) {
    return { state: 'unavailable', why: message(err) };
  }
}

async function readKey(file: string, kind: 'private' | 'public'): Promise<KeyFile> {
  try {
    const got = await readRegularFile(file, 16 * 1024);
    if (!got) return { state: 'missing' };
    const key = kind === 'private' ? parsePrivateKey(got.bytes) : parsePublicKey(got.bytes);
    return { state: 'ok', rawPublicKey: rawPublicKey(key).toString('hex') };
  } catch (err) {
    return { state: 'invalid', error: `not an Ed25519 ${kind} key in PEM (${message(err)})` };
  }
}

// A record file read by `read` (null when absent) as missing, invalid (why) or its fields.
async function readRecord<T extends object>(read: () => Promise<T | null>): Promise<{ state: 'missing' } | { state: 'invalid'; error: string } | ({ state: 'ok' } & T)> {
  try {
    const got = await read();
    return got === null ? { state: 'missing' } : { state: 'ok', ...got };
  } catch (err) {
    return { state: 'invalid', error: message(err) };
  }
}

// The trust rule as the helper applies it (platform/trusted-file.ts): in production it is root;
// under a root prefix it runs as the current user, who stands in for root.
export function helperTrustScope(paths: HostPaths, folder: string): TrustScope {
  return { ...trustScope(folder, paths.root), uid: paths.root ? (process.geteuid?.() ?? 0) : 0 };
}

// Every trusted-keys/<app>/*.pub, each with why the helper would ignore it (null: it is trusted).
async function listTrustedKeys(paths: HostPaths): Promise<KeysObservation['trustedKeys']> {
  const out: KeysObservation['trustedKeys'] = [];
  const dir = paths.trustedKeysDir;
  const apps = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const app of apps.filter((d) => d.isDirectory()).map((d) => d.name).sort()) {
    try {
      const got = await loadTrustedKeys(path.join(dir, app), helperTrustScope(paths, path.join(dir, app)));
      out.push(...got.files.map((file) => ({ file, error: null })), ...got.ignored.map((i) => ({ file: i.file, error: i.why })));
    } catch (err) {
      out.push({ file: path.join(dir, app), error: message(err) });
    }
  }
  return out.sort((a, b) => a.file.localeCompare(b.file));
}

// The CA files the host config names, each read as the helper (fetch.caFile) or doctor's own
// clock probe (controlPlane.caFile) would: through the trust rule.
export async function gatherCaFiles(paths: HostPaths, config: ConfigObservation): Promise<CaFileObservation[]> {
  if (!config.ok) return [];
  const out: CaFileObservation[] = [];
  for (const { setting, file } of config.caFiles) {
    try {
      const got = await readTrustedFile(file, helperTrustScope(paths, path.dirname(file)), 4 * 1024 * 1024);
      out.push(got.state === 'ok' ? { setting, file, state: 'ok' } : got.state === 'missing' ? { setting, file, state: 'missing' } : { setting, file, state: 'untrusted', why: got.why });
    } catch (err) {
      out.push({ setting, file, state: 'untrusted', why: message(err) });
    }
  }
  return out;
}

// The helper key pair, the trusted keys, state/node.json and the agent's enrollment.json and
// control-plane.json.
export async function gatherKeys(paths: HostPaths): Promise<KeysObservation> {
  const files = agentFiles(paths);
  return {
    helperKeyFile: paths.helperKey,
    helperPubFile: paths.helperPub,
    helperKey: await readKey(paths.helperKey, 'private'),
    helperPub: await readKey(paths.helperPub, 'public'),
    trustedKeys: await listTrustedKeys(paths),
    // Its presence only: the helper reads it under the trust rule, and `status` says how it went.
    tufRoot: await fsp.lstat(path.join(paths.trustDir, 'metadata', 'root.json')).then((st) => st.isFile(), () => false),
    nodeStateFile: paths.nodeState,
    enrollmentFile: files.enrollment,
    nodeState: await readRecord(async () => {
      const nodeId = await readNodeId(paths);
      return nodeId === null ? null : { nodeId };
    }),
    enrollment: await readRecord(async () => {
      const e = await readEnrollment(files);
      return e && { nodeId: e.nodeId, controlPlaneUrl: e.controlPlaneUrl };
    }),
    controlPlaneFile: files.controlPlane,
    controlPlane: await readRecord(async () => {
      const c = await readControlPlaneFile(files);
      return c && { ...(c.urls ? { urls: c.urls } : {}), ...(c.answered ? { answered: c.answered } : {}) };
    }),
  };
}

const accounts = {
  user: async (n: string) => {
    const u = await lookupUser(n);
    return u && { name: u.name, id: u.uid };
  },
  group: async (n: string) => {
    const g = await lookupGroup(n);
    return g && { name: g.name, id: g.gid };
  },
};

// The host config as the helper would load it, except the file's owner and mode, which the
// permissions check reports (one problem, one failing check).
export async function gatherConfig(paths: HostPaths): Promise<ConfigObservation> {
  const file = paths.configFile;
  try {
    const c = await loadHostConfig(file, { isRoot: process.getuid?.() === 0, accounts, checkOwner: false });
    return {
      ok: true,
      file,
      apps: Object.entries(c.apps).map(([name, a]) => ({ name, runner: a.runner })),
      controlPlane: c.controlPlane ?? null,
      caFiles: [
        ...(c.fetch.caFile ? [{ setting: 'fetch.caFile' as const, file: c.fetch.caFile }] : []),
        ...(c.controlPlane?.caFile ? [{ setting: 'controlPlane.caFile' as const, file: c.controlPlane.caFile }] : []),
      ],
      diskReserveBytes: c.fetch.diskReserveBytes,
    };
  } catch (err) {
    return { ok: false, file, error: message(err) };
  }
}

async function nearestExisting(dir: string): Promise<string> {
  for (let d = dir; ; d = path.dirname(d)) {
    if (await fsp.stat(d).then(() => true, () => false)) return d;
    if (d === path.dirname(d)) return d;
  }
}

// Free space for the release store and the state (the nearest existing folder of each).
export async function gatherDisk(paths: HostPaths): Promise<DiskObservation[]> {
  const out: DiskObservation[] = [];
  for (const [label, dir] of [['/opt/steward', path.dirname(paths.appsDir)], ['/var/lib/steward', paths.varLib]] as const) {
    const at = await nearestExisting(dir);
    try {
      out.push({ label, dir: at, space: { ok: true, ...(await diskSpace(at)) } });
    } catch (err) {
      out.push({ label, dir: at, space: { ok: false, error: message(err) } });
    }
  }
  return out;
}
