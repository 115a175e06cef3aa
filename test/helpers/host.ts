import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, chmodSync, constants as fsConstants, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostPaths, trustedKeysFor, type HostPaths } from '../../src/core/paths.js';
import { generateKeyPair, parsePrivateKey, signEnvelope, DOMAINS } from '../../src/platform/keys.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { findCgroupHome, removeCgroupHome } from '../../src/helper/runners/app-cgroup.js';
import { findMemoryHome, removeMemoryHome } from '../../src/helper/runners/memory-cgroup.js';
import { helperStatus } from './helper-status.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = {
  agentctl: path.join(REPO, 'bin/agentctl.js'),
  helper: path.join(REPO, 'bin/steward-helper.js'),
};
export const IS_ROOT = process.getuid?.() === 0;

// Where a test that writes a huge number of files makes its temp folder: /dev/shm (a tmpfs on
// Linux) when it is there and writable, else the usual temp folder. On a disk, writing 100,000
// files took four times as long on this machine.
export function tempBase(inMemory = false): string {
  if (inMemory) {
    try {
      accessSync('/dev/shm', fsConstants.W_OK);
      return '/dev/shm';
    } catch {
      // no /dev/shm: the usual temp folder
    }
  }
  return os.tmpdir();
}

// A process app's config for tests: as root it needs a non-root user and group.
export function processApp(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { runner: 'process', ...(IS_ROOT ? { user: 'nobody', group: 'nogroup' } : {}), ...extra };
}

export interface TestHost {
  root: string;
  paths: HostPaths;
  // A scratch folder outside the root prefix, for tarballs and sentinels.
  scratch: string;
  writeConfig(config: Record<string, unknown>): void;
  cleanup(): void;
}

// A whole host layout in a temp folder (the root prefix), root-owned 0755 when root.
export function makeHost(config: Record<string, unknown> = { apps: { web: processApp() } }, opts: { inMemory?: boolean } = {}): TestHost {
  const base = mkdtempSync(path.join(tempBase(opts.inMemory), 'steward-test-'));
  chmodSync(base, 0o755);
  const root = path.join(base, 'root');
  const scratch = path.join(base, 'scratch');
  mkdirSync(root, { mode: 0o755 });
  mkdirSync(scratch, { mode: 0o755 });
  const paths = hostPaths(root);
  const host: TestHost = {
    root,
    paths,
    scratch,
    writeConfig(c) {
      mkdirSync(path.dirname(paths.configFile), { recursive: true, mode: 0o755 });
      writeFileSync(paths.configFile, JSON.stringify(c, null, 2), { mode: 0o644 });
    },
    cleanup() {
      // An app outlives its helper by design (docs/design.md §5), so a test that ends with one running
      // would leave it behind for the rest of the suite (seen: 8 `node server.js` per run).
      killHostApps(root, paths);
      rmSync(base, { recursive: true, force: true });
      // The apps' cgroups a helper made for this host (as root, without systemd), once empty.
      const cgroups = findCgroupHome(root);
      if (cgroups) removeCgroupHome(cgroups);
      removeMemoryHome(findMemoryHome(root, cgroups));
    },
  };
  host.writeConfig(config);
  return host;
}

// The pid the run record supervisor/<app>.json names, or null.
export function recordedPid(host: Pick<TestHost, 'paths'>, app: string): number | null {
  try {
    const rec = JSON.parse(readFileSync(path.join(host.paths.supervisorDir, `${app}.json`), 'utf8'));
    return typeof rec?.process?.pid === 'number' ? rec.process.pid : null;
  } catch {
    return null;
  }
}

// SIGKILLs the process group of every app a supervisor record of this host names, when that
// process is still this host's (its folder lies under `root`: a pid reused since by another
// process is left alone).
function killHostApps(root: string, paths: HostPaths): void {
  killHostKeepers(paths);
  let apps: string[];
  try {
    apps = readdirSync(paths.supervisorDir).filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -'.json'.length));
  } catch {
    return;
  }
  for (const app of apps) {
    const pid = recordedPid({ paths }, app);
    if (pid === null || pid <= 1) continue;
    try {
      if (readlinkSync(`/proc/${pid}/cwd`).startsWith(`${root}/`)) process.kill(-pid, 'SIGKILL');
    } catch {
      // No such process, or not ours to look at: nothing to kill.
    }
  }
}

export interface ReleaseKey {
  keyId: string;
  publicPem: string;
  privatePem: string;
  // Signs a manifest payload into an envelope.
  sign(payload: Record<string, unknown>): Envelope;
}

// A fresh release key; `trustFor` apps get its public half in trusted-keys/<app>/.
export function makeReleaseKey(host?: TestHost, trustFor: string[] = []): ReleaseKey {
  const kp = generateKeyPair();
  const priv = parsePrivateKey(kp.privatePem);
  for (const app of trustFor) {
    if (!host) break;
    const dir = trustedKeysFor(host.paths, app);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    writeFileSync(path.join(dir, `${kp.keyId}.pub`), kp.publicPem, { mode: 0o644 });
  }
  return { ...kp, sign: (payload) => signEnvelope(DOMAINS.manifest, payload, priv) };
}

// sha512 SRI of bytes.
export function sri(bytes: Buffer): string {
  return 'sha512-' + createHash('sha512').update(bytes).digest('base64');
}

// A manifest payload for bytes, expiring in a day unless told otherwise.
export function manifestFor(app: string, version: string, bytes: Buffer, extra: Record<string, unknown> = {}) {
  return {
    name: app,
    version,
    url: `https://releases.invalid/${app}-${version}.tgz`,
    size: bytes.length,
    integrity: sri(bytes),
    expires: Date.now() + 86_400_000,
    ...extra,
  };
}

export interface HelperProcess {
  child: ChildProcess;
  stderr(): string;
  stop(): Promise<number | null>;
  kill(): Promise<void>;
}

// Starts steward-helper on a host and waits until its status answers and, unless
// `untilRecovered` is false, until its start (recovery, first pass) is over.
// The node options a unit of systemd/ gives its daemon: the words between /usr/bin/node and the
// script in its ExecStart. The footprint bench runs the daemons with them, as installed.
export function unitNodeFlags(unit: 'steward-helper.service' | 'steward-agent.service'): string[] {
  const text = readFileSync(path.join(REPO, 'systemd', unit), 'utf8');
  const exec = /^ExecStart=\/usr\/bin\/node((?: --[^\s]+)*) \S+\.js$/m.exec(text);
  if (!exec) throw new Error(`${unit}: no ExecStart=/usr/bin/node [--flags] <script>.js line`);
  return exec[1]!.split(' ').filter(Boolean);
}

// The environment a unit of systemd/ gives its daemon (its Environment= lines, each a list of
// unquoted KEY=VALUE words), for the benches that run the daemons as installed.
export function unitEnvironment(unit: 'steward-helper.service' | 'steward-agent.service'): Record<string, string> {
  const text = readFileSync(path.join(REPO, 'systemd', unit), 'utf8');
  const env: Record<string, string> = {};
  for (const m of text.matchAll(/^Environment=(.*)$/gm)) {
    for (const word of m[1]!.split(' ').filter(Boolean)) {
      const kv = /^([A-Za-z_][A-Za-z0-9_]*)=([^"'\\]*)$/.exec(word);
      if (!kv) throw new Error(`${unit}: Environment= word ${word} is not an unquoted KEY=VALUE`);
      env[kv[1]!] = kv[2]!;
    }
  }
  return env;
}

// `runAs`: the helper (and the agentctl that waits for it) as that user, not this process's.
export async function startHelper(host: TestHost, env: Record<string, string> = {}, opts: { untilRecovered?: boolean; nodeArgs?: string[]; bin?: string; runAs?: RunAsIds } = {}): Promise<HelperProcess> {
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.bin ?? BIN.helper, '--root', host.root], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, DEBUG: 'steward:*', ...env },
    ...(opts.runAs ?? {}),
  });
  let err = '';
  child.stderr?.on('data', (c) => (err += c));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`steward-helper exited ${child.exitCode}: ${err}`);
    // Asked as `runAs` when given (that user's socket), else from this process (helper-status.ts).
    const status = opts.runAs ? await agentctl(host, ['status', '--json'], {}, BIN.agentctl, { runAs: opts.runAs }).then((r) => (r.code === 0 ? r.json : null), () => null) : await helperStatus(host.root);
    // Ready once the start (recovery, first pass) is done: until then updates get RECOVERING.
    if (status && (status.recovering === false || opts.untilRecovered === false)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`steward-helper did not answer status within 15 s: ${err}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    stderr: () => err,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
    kill: async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

// A user and group to run a test's programs as (child_process's uid and gid).
export interface RunAsIds {
  uid: number;
  gid: number;
}

// Runs agentctl against a host (adds --root).
// `bin`: another build's bin/agentctl.js (the compatibility tests run the previous release's).
// `runAs`: as that user, not this process's.
export function agentctl(host: TestHost, args: string[], env: Record<string, string> = {}, bin: string = BIN.agentctl, opts: { runAs?: RunAsIds | undefined } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, '--root', host.root, ...args],
      { env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024, ...(opts.runAs ?? {}) },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        let json: unknown = undefined;
        try {
          json = JSON.parse(stdout);
        } catch {
          /* not JSON */
        }
        resolve({ code, stdout, stderr, json });
      },
    );
  });
}

// Every path under `dir` with its type, size and mode: a snapshot to compare.
export async function snapshotTree(dir: string, skip: (p: string) => boolean = () => false): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const stack = [dir];
  while (stack.length) {
    const d = stack.pop() as string;
    let names: string[];
    try {
      names = await fsp.readdir(d);
    } catch {
      continue;
    }
    for (const n of names) {
      const p = path.join(d, n);
      if (skip(p)) continue;
      const st = await fsp.lstat(p);
      const kind = st.isDirectory() ? 'd' : st.isSymbolicLink() ? `l:${await fsp.readlink(p)}` : st.isFile() ? 'f' : 'other';
      out.set(path.relative(dir, p), `${kind} ${st.size} ${(st.mode & 0o7777).toString(8)}`);
      if (st.isDirectory()) stack.push(p);
    }
  }
  return out;
}

// SIGKILLs the socket keepers of this host (src/helper/sockets/socket-keeper.ts): each outlives its
// helper by design, and one left behind would hold its test's port for the rest of the suite. Only
// the process its pid file in this host's run folder names (pid and start time) is killed.
function killHostKeepers(paths: HostPaths): void {
  const dir = path.join(paths.runDir, 'keepers');
  let files: string[];
  try {
    files = readdirSync(dir).filter((n) => n.endsWith('.pid'));
  } catch {
    return;
  }
  for (const f of files) {
    try {
      const id = JSON.parse(readFileSync(path.join(dir, f), 'utf8'));
      if (!Number.isInteger(id?.pid) || id.pid <= 1) continue;
      // Still the process that wrote the file (its start time), not a pid reused since.
      const stat = readFileSync(`/proc/${id.pid}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]) === id.startTicks) process.kill(id.pid, 'SIGKILL');
    } catch {
      // gone, or not ours
    }
  }
}
