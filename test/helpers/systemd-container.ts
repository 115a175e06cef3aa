import { execFile, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import type { TestContext } from 'node:test';
import { REPO, IS_ROOT } from './host.js';
import { enterCgroupsScript, makeContainerCgroups, removeCgroupsScript, V1_MEMORY } from './container-cgroup.js';
import { skipUnlessCI } from './skip.js';
import { pollPause } from './helper-status.js';

// A real systemd (PID 1 of a container) for tests of the systemd runner, booted as
// docs/testing.md ("Run the end-to-end suite locally") says: the host's own root with a read-only /usr and a
// fresh tmpfs for the rest, the repository bind-mounted read-only at /opt/src. Its /usr/bin/node
// is the node running the tests (the host's /usr/bin/node may be another version, which the
// native addons in node_modules were not built for). Root reads /opt/src; another user inside
// runs code from a readableCopy (readable-copy.ts) bound in with `bindRo`.

export const CONTAINER_REPO = '/opt/src';
const NSPAWN = '/usr/bin/systemd-nspawn';
const INSTALL_HINT = 'apt-get install -y systemd-container';
let booted = 0;

export interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface SystemdContainer {
  machine: string;
  // The container's PID 1 (systemd), as the host sees it.
  pid: number;
  // Milliseconds from spawning systemd-nspawn to `is-system-running` answering running/degraded.
  bootMs: number;
  // Runs a command inside (nsenter into every namespace of PID 1); never rejects on exit codes.
  exec(cmd: string, args?: string[], opts?: { timeoutMs?: number }): Promise<ExecResult>;
  // Spawns a long-running command inside, with pipes to the test.
  spawn(cmd: string, args?: string[], opts?: SpawnOptions): ChildProcess;
  // Powers the container off; kills its PID 1 (and with it everything inside) when systemd refuses
  // the poweroff or the container is not gone within 15 s. Resolves once nspawn has ended and its
  // cgroups are removed. Idempotent.
  stop(): Promise<void>;
  // What systemd-nspawn printed (the boot console), for failure messages.
  console(): string;
}

// Why the systemd suites cannot run here, or null when they can. Under CI (CI=true) a missing
// piece is an error, not a skip: the suite must not pass by silently doing nothing.
export function systemdContainerSkipReason(): string | null {
  let reason: string | null = null;
  if (process.platform !== 'linux') reason = 'systemd containers need Linux';
  else if (!IS_ROOT) reason = 'booting a systemd container needs root (CI runs as root)';
  else if (!existsSync(NSPAWN)) reason = `systemd-nspawn is missing: ${INSTALL_HINT}`;
  else if (!existsSync('/usr/bin/nsenter')) reason = 'nsenter (util-linux) is missing';
  if (reason && process.env.CI === 'true') {
    throw new Error(`CI must run the systemd runner tests, but: ${reason} (add \`${INSTALL_HINT}\` to .ci/run)`);
  }
  return reason;
}

// Boots a container for a test, or skips the test with the printed reason when this machine
// cannot (not root, no systemd-nspawn, no boot). Under CI every one of those fails instead.
export async function bootOrSkip(t: TestContext, opts: BootOptions = {}): Promise<SystemdContainer | null> {
  const reason = systemdContainerSkipReason();
  if (reason) {
    skipUnlessCI(t, reason);
    return null;
  }
  try {
    const box = await bootSystemdContainer(opts);
    console.log(`systemd container booted in ${box.bootMs.toFixed(0)} ms (machine ${box.machine}, PID 1 = ${box.pid})`);
    return box;
  } catch (err) {
    if (process.env.CI === 'true') throw err;
    console.log(`skipping: ${(err as Error).message}`);
    t.skip((err as Error).message.split('\n')[0]);
    return null;
  }
}

export interface BootOptions {
  machine?: string;
  timeoutMs?: number;
  // Host folders mounted read-only inside: [host path, path in the container].
  bindRo?: Array<[string, string]>;
  // Host folders mounted writable inside: [host path, path in the container]. What the test
  // reads from this side with a library that resolves symbolic links (SQLite does, in every path
  // it opens) must be here: /proc/<pid>/root/... would resolve to this host's own files.
  bind?: Array<[string, string]>;
  // Folders given an empty writable tmpfs inside (under the read-only /usr, say).
  tmpfs?: string[];
  // Host folders made writable inside as overlayfs: [host folder (lower), host folder that takes
  // the writes (upper), path in the container]; dpkg, say, installs into /usr and its database.
  overlays?: Array<[string, string, string]>;
  // A v1 memory cgroup of the container's own (hybrid hosts), bound writable at MEMORY_BIND;
  // nspawn mounts v1 controllers read-only, so systemd inside applies no MemoryMax= until
  // giveMemoryController mounts it over /sys/fs/cgroup/memory.
  memoryCgroup?: boolean;
}

// Where a container booted with `memoryCgroup` finds its own v1 memory cgroup.
export const MEMORY_BIND = '/run/host-memory-cgroup';

// Boots systemd in a container and waits until it is up; throws with the console output when
// it cannot boot.
export async function bootSystemdContainer(opts: BootOptions = {}): Promise<SystemdContainer> {
  const machine = opts.machine ?? `steward-test-${process.pid}-${++booted}`;
  const t0 = performance.now();
  // Its own cgroup, so no other container's units share its units' cgroups (container-cgroup.ts).
  const cgroups = await makeContainerCgroups(machine, { memory: opts.memoryCgroup === true });
  const memoryDir = cgroups.find((d) => d.startsWith(`${V1_MEMORY}/`));
  // A shell stays systemd-nspawn's parent as its watchdog. It is in a process group of its own
  // (detached), so a kill of the test's group (the runner's file timeout) does not reach it, and
  // it holds the read end of a pipe whose write end only this process has. When this process
  // closes it (stop() below) or ends in any way, SIGKILL included, the read sees end-of-file and
  // nspawn gets SIGTERM, on which (--kill-signal=SIGKILL) it kills the container's PID 1: the
  // kernel then kills every process inside, and nspawn removes what it set up and exits. Its
  // mounts (binds, tmpfs, overlays) are in the container's mount namespace and go with it. Once
  // nspawn has ended, the shell removes the container's cgroups.
  const watchdog = `exec 3<&0
( ${enterCgroupsScript(cgroups)}exec "$@" 3<&- </dev/null ) &
nspawn=$!
( while read -r _; do :; done <&3; kill -TERM "$nspawn" 2>/dev/null ) &
watcher=$!
exec 3<&-
wait "$nspawn"
code=$?
kill "$watcher" 2>/dev/null
${removeCgroupsScript(cgroups)}exit "$code"`;
  const shell = spawn(
    '/bin/sh',
    [
      '-c',
      watchdog,
      'sh',
      NSPAWN,
      '-D', '/',
      '--volatile=yes',
      '--register=no',
      '--keep-unit',
      '--kill-signal=SIGKILL',
      `--machine=${machine}`,
      `--bind-ro=${REPO}:${CONTAINER_REPO}`,
      ...(process.execPath === '/usr/bin/node' ? [] : [`--bind-ro=${process.execPath}:/usr/bin/node`]),
      ...(opts.bindRo ?? []).map(([from, to]) => `--bind-ro=${from}:${to}`),
      ...(opts.bind ?? []).map(([from, to]) => `--bind=${from}:${to}`),
      ...(opts.tmpfs ?? []).map((dir) => `--tmpfs=${dir}`),
      ...(opts.overlays ?? []).map(([lower, upper, to]) => `--overlay=${lower}:${upper}:${to}`),
      ...(memoryDir ? [`--bind=${memoryDir}:${MEMORY_BIND}`] : []),
      '-b',
      '--',
      // Without firstboot=off the first-boot wizard waits for a key press.
      'systemd.firstboot=off',
      'systemd.unit=multi-user.target',
    ],
    { stdio: ['pipe', 'pipe', 'pipe'], detached: true },
  );
  let consoleText = '';
  const keep = (c: Buffer) => (consoleText = (consoleText + c.toString('utf8')).slice(-32_768));
  shell.stdout?.on('data', keep);
  shell.stderr?.on('data', keep);
  // Not unref'd: the pipes keep this process alive until the container is gone.
  shell.stdin?.on('error', () => undefined);
  const exited = () => shell.exitCode !== null || shell.signalCode !== null;
  const shellExit = new Promise<void>((resolve) => shell.once('close', () => resolve()));
  shell.once('error', (err) => keep(Buffer.from(`spawn failed: ${err.message}\n`)));

  let nspawnPid = 0;
  let pid1 = 0;
  const exec = (cmd: string, args: string[] = [], o: { timeoutMs?: number } = {}) =>
    run('/usr/bin/nsenter', ['-t', String(pid1), '-a', cmd, ...args], o.timeoutMs ?? 30_000);
  // The watchdog's way (nspawn kills PID 1), then, should nspawn not end within 5 s, SIGKILL to
  // PID 1 and nspawn themselves.
  const kill = async () => {
    if (exited()) return shellExit;
    shell.stdin?.end();
    const t = setTimeout(() => {
      for (const pid of [pid1, nspawnPid].filter((p) => p > 0)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
    }, 5000);
    await shellExit;
    clearTimeout(t);
  };
  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= (async () => {
      if (exited()) return shellExit;
      // An orderly poweroff, unless systemd refuses it (a unit file it can no longer read, say).
      const poweroff = pid1 ? await exec('systemctl', ['poweroff', '--no-block'], { timeoutMs: 5000 }) : null;
      if (poweroff?.code === 0) {
        const t = setTimeout(() => void kill(), 15_000);
        await shellExit;
        clearTimeout(t);
      }
      await kill();
    })());

  const timeoutMs = opts.timeoutMs ?? 60_000;
  const deadline = t0 + timeoutMs;
  let last = '';
  try {
    for (;;) {
      if (exited()) throw new Error('systemd-nspawn exited during boot');
      if (!nspawnPid && shell.pid !== undefined) nspawnPid = await findChild(shell.pid, 'systemd-nspawn');
      if (!pid1 && nspawnPid) pid1 = await findChild(nspawnPid, 'systemd');
      if (pid1) {
        const r = await exec('systemctl', ['is-system-running'], { timeoutMs: 5000 });
        last = r.stdout.trim() || r.stderr.trim();
        if (last === 'running' || last === 'degraded') break;
      }
      if (performance.now() > deadline) throw new Error(`not booted within ${timeoutMs} ms (is-system-running: ${last || 'no PID 1 yet'})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } catch (err) {
    await kill();
    throw new Error(`cannot boot a systemd container: ${(err as Error).message}\n--- systemd-nspawn output ---\n${consoleText}`);
  }
  const bootMs = performance.now() - t0;
  return {
    machine,
    pid: pid1,
    bootMs,
    exec,
    spawn: (cmd, args = [], o = {}) => spawn('/usr/bin/nsenter', ['-t', String(pid1), '-a', cmd, ...args], { stdio: 'pipe', ...o }),
    stop,
    console: () => consoleText,
  };
}

// The pid of the child of `parent` whose command name is `comm`, or 0.
async function findChild(parent: number, comm: string): Promise<number> {
  for (const name of await fsp.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await fsp.readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    const close = stat.lastIndexOf(')');
    if (close < 0) continue;
    const ppid = Number(stat.slice(close + 2).split(' ')[1]);
    if (ppid === parent && stat.slice(stat.indexOf('(') + 1, close) === comm) return Number(name);
  }
  return 0;
}

function run(file: string, args: string[], timeoutMs: number): Promise<ExecResult> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 8 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

// Polls `fn` every `everyMs` until it returns something truthy, and returns that; throws naming
// `what` after `timeoutMs`. Each poll inside a container is an nsenter, so callers pick the cadence.
export async function waitFor<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 30_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const t0 = Date.now();
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pollPause(everyMs, Date.now() - t0);
  }
}

// Gives the container's systemd a memory controller it can write to, for MemoryMax=: on a hybrid
// host (v1 memory), its own v1 memory cgroup (booted with `memoryCgroup`) mounted over the
// read-only /sys/fs/cgroup/memory, then systemd re-executed (it decides at its start which
// controllers it may use). Returns what the container's systemd now limits memory with, or null
// and why not.
export async function giveMemoryController(box: SystemdContainer): Promise<{ via: 'v1' | 'v2' } | { via: null; why: string }> {
  const v2 = await box.exec('cat', ['/sys/fs/cgroup/cgroup.controllers']);
  if (v2.code === 0) return v2.stdout.split(/\s+/).includes('memory') ? { via: 'v2' } : { via: null, why: 'the container\'s cgroup2 has no memory controller' };
  if ((await box.exec('test', ['-e', `${MEMORY_BIND}/memory.limit_in_bytes`])).code !== 0) {
    return { via: null, why: 'no v1 memory cgroup of its own (boot it with memoryCgroup on a hybrid host)' };
  }
  const mount = await box.exec('mount', ['--bind', MEMORY_BIND, '/sys/fs/cgroup/memory']);
  if ((await box.exec('test', ['-w', '/sys/fs/cgroup/memory/cgroup.procs'])).code !== 0) return { via: null, why: `mount: ${mount.stderr.trim()}` };
  const reexec = await box.exec('systemctl', ['daemon-reexec']);
  if (reexec.code !== 0) return { via: null, why: `daemon-reexec: ${reexec.stderr.trim()}` };
  await waitFor('systemd back after daemon-reexec', async () => /^(running|degraded)$/.test((await box.exec('systemctl', ['is-system-running'])).stdout.trim()), 30_000, 100);
  return { via: 'v1' };
}
