import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import { StewardError, toStewardError } from '../../core/errors.js';
import { APP_NAME_RE } from '../../core/name-checks.js';
import { INSTANCE_TOKEN_RE } from '../../core/run-record-schema.js';
import type { Clock } from '../../platform/clock.js';
import { runTool } from '../../platform/exec.js';
import { logger } from '../../platform/log.js';
import { isSameProcessAlive, readProcIdentity, type ProcIdentity } from '../../platform/proc-identity.js';
import { APP_PATH, appUnitName } from '../../platform/systemd.js';
import { buildAppEnv } from './app-env.js';
import { wrapWithFdOpener } from './app-fds.js';
import { prepareStateDirSync } from './state-dir.js';
import type { AppRunner, AppTarget, ExitInfo, StartSpec, StartedProcess } from './runner.js';
import { parseUnitShow, systemctl, unitStatus, type UnitStatus } from './unit-runner.js';
import { isLimitApplied, parseKernelOomKill, readAppliedMemoryLimit } from './unit-memory-limit.js';

const debug = logger('helper:systemd');

// A unit that holds an app: steward-app-<app>.service (app names are [a-z0-9][a-z0-9_-]*), or a
// side of an app with sockets, steward-app-<app>[.<hash>]@<a|b>.service (socket-unit-files.ts).
const APP_UNIT_RE = /^steward-app-([a-z0-9][a-z0-9_-]{0,62})(?:\.[0-9a-f]{16})?(?:@[ab])?\.service$/;

export interface SystemdRunnerOptions {
  clock: Clock;
  isRoot: boolean;
  // TimeoutStopSec= of the unit: systemd's own SIGKILL deadline when something else stops it.
  // stop() escalates on its own `timeoutMs` as well.
  stopTimeoutMs?: number;
  // How long start() waits for the unit's start job and its MainPID.
  startTimeoutMs?: number;
}

// The `process` runner under systemd (docs/design.md §5): each app is its own transient service,
// steward-app-<app>.service, started by `systemd-run --wait --collect`. The systemd-run client
// stays the helper's child so the app's exit is heard at once; the unit does not depend on
// the client, so a crash of the helper (or of the client) leaves the app running.
//
// The clients are in the helper unit's cgroup, which KillMode=process leaves alone when the
// helper stops: release() ends them at its stop (the apps run on), or systemd would warn of
// "left-over process" (systemd-run) at every restart of the helper and carry them along.
export function createSystemdRunner(opts: SystemdRunnerOptions): AppRunner {
  const clients: Clients = { live: new Set(), released: false };
  return {
    start: (spec) => startUnitApp(spec, opts, clients),
    release: () => releaseClients(clients),
    stop: (target, o) => stopUnitApp(target, opts.clock, o?.timeoutMs ?? opts.stopTimeoutMs ?? 10_000),
    isAlive: (identity) => isUnitAppAlive(identity),
    tailLog: (app, sinceMs, lines) => tailUnitLog(app, sinceMs, lines),
  };
}

// The app unit's last `lines` journal lines since `sinceMs`: its output and systemd's own lines
// about it ("Main process exited, code=exited, status=3"). '' when the journal has none.
// `more`: the units of its sides, when it has sockets (both: a handover runs two).
export async function tailUnitLog(app: string, sinceMs: number, lines: number, more: string[] = []): Promise<string> {
  if (!APP_NAME_RE.test(app) || lines <= 0) return '';
  const since = (Math.max(0, sinceMs) / 1000).toFixed(3);
  const units = [appUnitName(app), ...more].flatMap((u) => ['-u', u]);
  const r = await runTool('journalctl', [...units, `--since=@${since}`, '-n', String(lines), '-o', 'cat', '--no-pager', '-q'], {
    env: { PATH: APP_PATH, LANG: 'C.UTF-8' },
    timeoutMs: 10_000,
    maxBuffer: 4 * 1024 * 1024,
  });
  if (r.failure !== null) {
    throw new StewardError('IO_ERROR', `cannot read the journal of ${appUnitName(app)}: ${r.stderr.trim() || r.failure}`);
  }
  const text = r.stdout;
  return text === '' || text.endsWith('\n') ? text : text + '\n';
}

// The steward-app unit a process runs in and its cgroup path, from /proc/<pid>/cgroup, or null
// when it is gone or not in one. The path ends in the unit: 0::/system.slice/steward-app-web.service.
export async function appUnitOfPid(pid: number): Promise<AppCgroup | null> {
  if (!Number.isSafeInteger(pid) || pid <= 1) return null;
  const text = await fsp.readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => null);
  return text === null ? null : parseAppUnit(text);
}

export interface AppCgroup {
  unit: string;
  cgroup: string;
}

// Parses /proc/<pid>/cgroup for a steward-app unit: the v2 line ("0::/path") where there is
// one (unified and hybrid layouts: systemd tracks processes there), else the v1
// "n:name=systemd:/path" line (legacy layout).
export function parseAppUnit(cgroupText: string): AppCgroup | null {
  let v1: string | null = null;
  let v2: string | null = null;
  for (const line of cgroupText.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    const [, num, controllers, cgPath = ''] = m;
    if (num === '0' && controllers === '') v2 = cgPath;
    else if (controllers === 'name=systemd') v1 = cgPath;
  }
  const cgPath = v2 !== null && v2 !== '/' ? v2 : v1;
  if (cgPath === null) return null;
  const last = cgPath.split('/').pop() ?? '';
  return APP_UNIT_RE.test(last) ? { unit: last, cgroup: cgPath } : null;
}

// Alive: the same process (pid, start time, boot), in its steward-app unit, which is not
// inactive or failed and whose MainPID it still is.
export async function isUnitAppAlive(identity: ProcIdentity): Promise<boolean> {
  if (!(await isSameProcessAlive(identity))) return false;
  const found = await appUnitOfPid(identity.pid);
  if (!found) return false;
  const st = await unitStatus(found.unit);
  return st.mainPid === identity.pid && isUp(st);
}

export function isUp(st: UnitStatus): boolean {
  return st.loadState === 'loaded' && st.activeState !== 'inactive' && st.activeState !== 'failed';
}

// The systemd-run clients that run (each until its app's unit ends), and whether the runner let
// go of them (the helper stops).
export interface Clients {
  live: Set<ChildProcess>;
  released: boolean;
}

// The helper stops: ends the clients (the apps run on). First `released`: a client ended from
// here is no exit of its app to hear of.
export function releaseClients(clients: Clients): void {
  clients.released = true;
  for (const child of clients.live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // gone already
    }
  }
  clients.live.clear();
}

async function startUnitApp(spec: StartSpec, opts: SystemdRunnerOptions, clients: Clients): Promise<StartedProcess> {
  const what = `${spec.app} ${spec.version}`;
  if (!opts.isRoot) throw new StewardError('CONFIG_INVALID', `cannot start ${what} as a systemd unit: the helper is not root`);
  if (!APP_NAME_RE.test(spec.app)) throw new StewardError('CONFIG_INVALID', `cannot start ${what}: not an app name`);
  const st = await fsp.stat(spec.cwd).catch(() => null);
  if (!st?.isDirectory()) throw new StewardError('RELEASE_INVALID', `cannot start ${what}: the folder ${spec.cwd} does not exist`);
  prepareStateDirSync(spec, true, what);
  const unit = appUnitName(spec.app);
  // systemd-run at once: systemd itself refuses a second unit of this name ("already loaded"),
  // so no `systemctl show` (a process, tens of ms on the respawn path) has to ask first. Only a
  // unit still there (winding down, failed, or dead but not yet collected) costs a look and a retry.
  const deadline = opts.clock.monotonic() + (opts.stopTimeoutMs ?? 10_000) + 5000;
  for (let tries = 1; ; tries++) {
    const started = await spawnClient(spec, unit, opts, what, clients);
    if (started !== 'unit-exists') return started;
    debug('%s is still loaded (try %d): clearing it before starting again', unit, tries);
    if (opts.clock.monotonic() > deadline) throw new StewardError('IO_ERROR', `cannot start ${what}: ${unit} stays loaded`);
    // A unit of that name that is up is not ours to replace: clearOldUnit says so (INTERNAL).
    if ((await clearOldUnit(unit, opts, what)) === 'inactive') await opts.clock.sleep(Math.min(20 * tries, 200));
  }
}

// A unit of the same name that is still winding down (or failed and not yet collected)
// makes systemd-run refuse the name: wait for it, then forget a failed one. 'inactive': it is
// dead and only waits for systemd to collect it (its last client has just let go).
async function clearOldUnit(unit: string, opts: SystemdRunnerOptions, what: string): Promise<'gone' | 'inactive' | 'reset'> {
  const deadline = opts.clock.monotonic() + (opts.stopTimeoutMs ?? 10_000) + 5000;
  for (;;) {
    const st = await unitStatus(unit);
    if (st.loadState !== 'loaded') return 'gone';
    if (st.activeState === 'inactive') return 'inactive';
    if (st.activeState === 'failed') {
      await systemctl(['reset-failed', '--', unit]).catch(() => undefined);
      return 'reset';
    }
    if (st.activeState !== 'deactivating') {
      throw new StewardError('INTERNAL', `cannot start ${what}: ${unit} is already ${st.activeState} (main pid ${st.mainPid})`);
    }
    if (opts.clock.monotonic() > deadline) throw new StewardError('IO_ERROR', `cannot start ${what}: ${unit} does not finish stopping`);
    await opts.clock.sleep(100);
  }
}

// The systemd-run command line. No shell anywhere: --setenv takes NAME=VALUE verbatim, and
// `$` in the command is doubled because systemd expands $VAR in ExecStart arguments.
export function systemdRunArgs(spec: StartSpec, unit: string, stopTimeoutMs: number): string[] {
  const [file] = spec.command;
  if (file === undefined) throw new StewardError('RELEASE_INVALID', `cannot start ${spec.app} ${spec.version}: the command is empty`);
  if (file.includes('$')) throw new StewardError('RELEASE_INVALID', `cannot start ${spec.app} ${spec.version}: "$" in the program name ${file}`);
  const args = [
    '--wait',
    '--collect',
    `--unit=${unit.replace(/\.service$/, '')}`,
    // Type=exec: the start job (and so "Running as unit") completes only once execve worked.
    '--service-type=exec',
    `--description=steward app ${spec.app} ${spec.version}`,
    '-p', `WorkingDirectory=${spec.cwd}`,
    '-p', 'KillMode=mixed',
    '-p', `TimeoutStopSec=${Math.max(1, Math.ceil(stopTimeoutMs / 1000))}s`,
    '-p', 'StandardOutput=journal',
    '-p', 'StandardError=journal',
    '-p', `SyslogIdentifier=steward-app-${spec.app}`,
  ];
  if (spec.runAs) args.push('-p', `User=${spec.runAs.name}`, '-p', `Group=${spec.runAs.gid}`);
  if (spec.memoryMax !== undefined) args.push('-p', `MemoryMax=${spec.memoryMax}`);
  for (const [k, v] of Object.entries(buildAppEnv(spec))) args.push(`--setenv=${k}=${v}`);
  // The readiness and watchdog FIFOs: systemd-run cannot pass an fd, so a `sh` in the unit opens them (app-fds.ts).
  const command = wrapWithFdOpener(spec.command, spec.fds);
  args.push('--', ...command.map((a, i) => (i === 0 ? a : a.replaceAll('$', () => '$$'))));
  return args;
}

// systemd's answer when a unit of the name is still loaded (BUS_ERROR_UNIT_EXISTS).
const UNIT_EXISTS_RE = /Unit \S+ was already loaded or has a fragment file|Unit \S+ already exists/;

// Starts the client; 'unit-exists' when systemd refused the name because such a unit is still
// loaded (nothing was started).
async function spawnClient(spec: StartSpec, unit: string, opts: SystemdRunnerOptions, what: string, clients: Clients): Promise<StartedProcess | 'unit-exists'> {
  const args = systemdRunArgs(spec, unit, opts.stopTimeoutMs ?? 10_000);
  // Taken before the unit exists: the journal of this run (tailLog) starts here, and the
  // previous run's lines all came before (its unit was gone before this start).
  const startedAt = opts.clock.now();
  let child: ChildProcess;
  try {
    // cwd: systemd-run resolves a relative program name here, as the process runner would.
    child = spawn('systemd-run', args, {
      cwd: spec.cwd,
      env: { PATH: APP_PATH, LANG: 'C.UTF-8' },
      // Its own process group: a signal to the helper's group does not reach the client.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      shell: false,
    });
  } catch (err) {
    throw toStewardError(err, 'IO_ERROR', `cannot start ${what}: systemd-run`);
  }
  const out = collectOutput(child);
  clients.live.add(child);
  const closed = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once('close', (code, signal) => {
      clients.live.delete(child);
      // Released: the helper stops, and the app runs on; nothing is to be watched (no timer
      // of exitOf's may hold the stopping helper up).
      if (!clients.released) resolve({ code, signal });
    });
    child.once('error', (err) => {
      out.add(`spawn failed: ${err.message}\n`);
      resolve({ code: null, signal: null });
    });
  });
  // The helper may exit while the app runs on: neither the client nor its pipes keep it up.
  child.unref();
  const running = (await Promise.race([out.running, closed.then(() => false)])) || out.text().includes('Running as unit');
  if (!running) {
    const text = out.text().trim();
    if (UNIT_EXISTS_RE.test(text)) return 'unit-exists';
    const code = /Failed to find executable|Job for .* failed|Failed to (start|set up)/.test(text) ? 'RELEASE_INVALID' : 'IO_ERROR';
    throw new StewardError(code, `cannot start ${what} as ${unit}: ${text || 'systemd-run exited'}`);
  }
  const identity = await waitMainPid(unit, closed, opts, what, out);
  if (spec.memoryMax !== undefined) await requireMemoryLimit(spec, unit, identity, what);
  debug('started app=%s version=%s unit=%s pid=%d', spec.app, spec.version, unit, identity.pid);
  const exited = closed
    .then((c) => exitOf(out.text(), c, identity, spec.app, startedAt, opts.clock))
    .then((exit) => (spec.memoryMax !== undefined ? withKernelOom(exit, identity.pid, startedAt) : exit));
  return { identity, startedAt, exited };
}

// The unit's memory limit as its process's cgroup holds it: systemd starts a unit whose
// MemoryMax= it cannot apply (no memory controller it may write to) without one, and says
// nothing. Such a unit is stopped and its start refused (unit-memory-limit.ts says why).
export async function requireMemoryLimit(spec: StartSpec, unit: string, identity: ProcIdentity, what: string): Promise<void> {
  const wanted = spec.memoryMax as number;
  const applied = readAppliedMemoryLimit(identity.pid);
  if (isLimitApplied(applied, wanted)) return;
  // Gone already: its exit is what the caller hears, not a refusal.
  if (!(await isSameProcessAlive(identity))) return;
  debug('no memory limit on unit=%s (read back %s, wanted %d): stopping it', unit, applied, wanted);
  // Why stop it: an app whose limit the host does not hold must not run on as if it did.
  await systemctl(['stop', '--', unit]).catch(() => undefined);
  throw new StewardError(
    'CONFIG_INVALID',
    `cannot start ${what}: apps.${spec.app}.memoryMax is ${wanted} bytes but systemd did not apply it to ${unit} (its cgroup's limit reads ${applied === null ? 'nothing: no memory controller' : applied}); remove memoryMax or give systemd a memory controller`,
  );
}

// The client's output (a few lines), and when "Running as unit" appeared: with --wait and
// Type=exec, systemd-run prints it once the start job is done, before waiting for the end.
export function collectOutput(child: ChildProcess) {
  let buf = '';
  let onRunning: (v: boolean) => void = () => undefined;
  const running = new Promise<boolean>((resolve) => (onRunning = resolve));
  const add = (s: string) => {
    buf = (buf + s).slice(-16_384);
    if (buf.includes('Running as unit')) onRunning(true);
  };
  for (const s of [child.stdout, child.stderr]) {
    s?.setEncoding('utf8');
    s?.on('data', add);
    (s as unknown as { unref?: () => void } | null)?.unref?.();
  }
  return { running, add, text: () => buf };
}

// The unit's MainPID as a process identity, polled until systemd has one.
async function waitMainPid(
  unit: string,
  closed: Promise<unknown>,
  opts: SystemdRunnerOptions,
  what: string,
  out: { text(): string },
): Promise<ProcIdentity> {
  let done = false;
  void closed.then(() => (done = true));
  const deadline = opts.clock.monotonic() + (opts.startTimeoutMs ?? 10_000);
  for (;;) {
    const st = await unitStatus(unit);
    if (st.mainPid > 0) {
      const id = await readProcIdentity(st.mainPid);
      // Check it is still the unit's main process: the pid may have exited in between.
      if (id && (await appUnitOfPid(st.mainPid))?.unit === unit) return id;
    }
    if (done) {
      // The app ended before its pid could be read (it lived only a few milliseconds). How it
      // ended goes with the error: the supervisor records it as that start's exit.
      const exit = parseExitLine(out.text());
      throw new StewardError('RELEASE_INVALID', `cannot start ${what}: it exited at once (${lastLines(out.text())})`, exit ? { details: { exit } } : {});
    }
    if (opts.clock.monotonic() > deadline) {
      throw new StewardError('IO_ERROR', `cannot start ${what}: ${unit} has no main process after ${opts.startTimeoutMs ?? 10_000} ms`);
    }
    await opts.clock.sleep(20);
  }
}

// How the app ended, from the client's last lines ("Main processes terminated with:
// code=exited/status=3"). A client that ended without them (killed, or its query of the unit
// failed) says nothing of the app: then the unit is watched until its main process is gone, and
// the journal's line of systemd's own about it ("Main process exited, code=exited, status=3/...")
// tells how it ended.
async function exitOf(
  text: string,
  client: { code: number | null; signal: string | null },
  identity: ProcIdentity,
  app: string,
  startedAt: number,
  clock: Clock,
): Promise<ExitInfo> {
  const parsed = parseExitLine(text);
  if (parsed) return parsed;
  debug('systemd-run client ended without a result app=%s code=%s signal=%s output=%j; watching the unit', app, client.code, client.signal, text.slice(-400));
  for (;;) {
    const alive = await isUnitAppAlive(identity).catch(() => true);
    if (!alive) break;
    await clock.sleep(500);
  }
  // systemd writes its line as it reaps the process: by now it is in, or it never will be.
  const journal = await tailUnitLog(app, startedAt, 50).catch(() => '');
  return parseJournalExit(journal) ?? { code: null, signal: null };
}

// A SIGKILL that systemd did not name oom-kill, of an app with a memory limit: on a v1 memory
// controller systemd cannot tell (it reads OOM kills from memory.events, a v2 file), so the
// kernel's own log line about that very pid decides. A log that cannot be read says nothing.
export async function withKernelOom(exit: ExitInfo, pid: number, sinceMs: number): Promise<ExitInfo> {
  if (exit.reason || exit.signal !== 'SIGKILL') return exit;
  const since = (Math.max(0, sinceMs - 1000) / 1000).toFixed(3);
  const r = await runTool('journalctl', ['-k', `--since=@${since}`, '-n', '500', '-o', 'cat', '--no-pager', '-q'], {
    env: { PATH: APP_PATH, LANG: 'C.UTF-8' },
    timeoutMs: 10_000,
    maxBuffer: 4 * 1024 * 1024,
  });
  if (r.failure !== null) {
    debug('cannot read the kernel log for an OOM kill of pid=%d: %s', pid, r.stderr.trim() || r.failure);
    return exit;
  }
  return parseKernelOomKill(r.stdout, pid) ? { ...exit, reason: 'OOM' } : exit;
}

// The last "Main process exited, code=<exited|killed|dumped>, status=<n>/<NAME>" line that
// systemd logged for the unit (its own line; an app printing the same words cannot be told from
// it, so this is a fallback only, for the code shown to the operator, never a decision's proof).
// An OOM kill is systemd's "Failed with result 'oom-kill'" line after it (systemd sees the kill in
// the unit's memory.events: cgroup v2 only).
export function parseJournalExit(text: string): ExitInfo | null {
  const all = [...text.matchAll(/^\S*: Main process exited, code=(\w+), status=(\d+)(?:\/(\w+))?$/gm)];
  const m = all.at(-1);
  if (!m) return null;
  const [, how, num, name] = m;
  const after = text.slice((m.index ?? 0) + m[0].length);
  const oom = /^\S*: Failed with result 'oom-kill'\.$/m.test(after) ? { reason: 'OOM' as const } : {};
  if (how === 'exited') return { code: Number(num), signal: null, ...oom };
  if (how === 'killed' || how === 'dumped') return { code: null, signal: name?.startsWith('SIG') ? name : name ? `SIG${name}` : null, ...oom };
  return { code: null, signal: null, ...oom };
}

// Parses systemd-run's "Main processes terminated with: code=<exited|killed|dumped>/status=<n|SIG>",
// and its "Finished with result: oom-kill" before it: the unit's Result=, which systemd sets
// when the kernel's OOM killer killed a process of the unit (it reads memory.events: cgroup v2).
// The client's own output, never the app's (that goes to the journal).
export function parseExitLine(text: string): ExitInfo | null {
  const m = /Main processes terminated with: code=(\w+)\/status=([\w+-]+)/.exec(text);
  if (!m) return null;
  const [, how, status] = m;
  const oom = /^Finished with result: oom-kill$/m.test(text) ? { reason: 'OOM' as const } : {};
  if (how === 'exited' && status !== undefined && /^\d+$/.test(status)) return { code: Number(status), signal: null, ...oom };
  if ((how === 'killed' || how === 'dumped') && status) return { code: null, signal: status.startsWith('SIG') ? status : `SIG${status}`, ...oom };
  return { code: null, signal: null, ...oom };
}

export function lastLines(text: string): string {
  return text.trim().split('\n').slice(-3).join('; ');
}

// Stops the app's unit: SIGTERM to the main process (KillMode=mixed), SIGKILL to the whole
// cgroup after `timeoutMs`, and waits until the unit is gone. The unit steward-app-<app>.service
// of the system manager is acted on only with a proof that it is this app's (docs/design.md §5):
// - its main process is the recorded one, in that very unit's cgroup; or
// - its environment holds the app's instance token, which the record held before the unit was
//   made: so a unit that a crash left unrecorded is still found (its processes may have left
//   versions/, which proves nothing anyway).
// Anything else of that name, and any process outside it, is left alone.
async function stopUnitApp(target: AppTarget, clock: Clock, timeoutMs: number): Promise<void> {
  if (!APP_NAME_RE.test(target.app)) return;
  await stopProvenUnits([appUnitName(target.app)], target, clock, timeoutMs);
}

// Stops those of `units` that prove to be the app's (above), all at once, one deadline for all.
export async function stopProvenUnits(units: string[], target: AppTarget, clock: Clock, timeoutMs: number): Promise<void> {
  const proven: string[] = [];
  for (const unit of units) {
    const st = await unitShow(unit);
    if (!isUp(st)) continue;
    if (!(await isRecordedMain(target.process, unit, st)) && !holdsInstance(st.environment, target.instance)) {
      debug('not stopping %s: neither its main process (%d) nor its environment is the recorded one', unit, st.mainPid);
      continue;
    }
    debug('stopping unit=%s pid=%d timeoutMs=%d', unit, st.mainPid, timeoutMs);
    proven.push(unit);
  }
  if (proven.length === 0) return;
  // --no-block: the deadline is ours (the unit's TimeoutStopSec was fixed at start).
  await systemctl(['stop', '--no-block', '--', ...proven]);
  const deadline = clock.monotonic() + timeoutMs;
  const left = [];
  for (const unit of proven) if (!(await waitUnitDown(unit, clock, Math.max(0, deadline - clock.monotonic())))) left.push(unit);
  if (left.length === 0) return;
  // Why SIGKILL to all: the app ignored SIGTERM past its stop timeout (docs/design.md §5).
  debug('stop timed out, killing the whole unit units=%s', left.join(','));
  await systemctl(['kill', '--kill-whom=all', '--signal=SIGKILL', '--', ...left]).catch(() => undefined);
  for (const unit of left) {
    if (!(await waitUnitDown(unit, clock, 10_000))) throw new StewardError('IO_ERROR', `${unit} is still running after SIGKILL`);
  }
}

// Whether `recorded` is alive and sits in `unit`'s own cgroup: a user's own `systemd-run --user
// --unit=steward-app-web` ends in the same name but is not the system manager's unit.
async function isRecordedMain(recorded: ProcIdentity | null, unit: string, st: UnitStatus): Promise<boolean> {
  if (!recorded || !(await isSameProcessAlive(recorded))) return false;
  const found = await appUnitOfPid(recorded.pid);
  if (found?.unit !== unit || st.controlGroup !== found.cgroup) {
    debug('pid=%d is not in %s of the system manager (%s, its cgroup %s)', recorded.pid, unit, st.controlGroup, found?.cgroup);
    return false;
  }
  // Read again: the cgroup read above must have been of the recorded process, not a new one.
  return isSameProcessAlive(recorded);
}

// Whether a unit's Environment= (as `systemctl show` prints it: space-separated, quoted where a
// value needs it) holds STEWARD_INSTANCE=<instance> as one whole assignment.
export function holdsInstance(environment: string, instance: string | null): boolean {
  if (!instance || !INSTANCE_TOKEN_RE.test(instance)) return false;
  return environment.split(/\s+/).includes(`STEWARD_INSTANCE=${instance}`);
}

// What stopUnitApp needs of the unit: its state, cgroup and environment, in one `systemctl show`.
export async function unitShow(unit: string): Promise<UnitStatus & { environment: string }> {
  const out = await systemctl(['show', '--property=LoadState,ActiveState,SubState,MainPID,NRestarts,ControlGroup,Environment', '--', unit]);
  const env = out.split('\n').find((l) => l.startsWith('Environment='));
  return { ...parseUnitShow(out), environment: env ? env.slice('Environment='.length) : '' };
}

async function waitUnitDown(unit: string, clock: Clock, ms: number): Promise<boolean> {
  const deadline = clock.monotonic() + ms;
  for (;;) {
    const st = await unitStatus(unit);
    if (!isUp(st)) return true;
    if (clock.monotonic() > deadline) return false;
    await clock.sleep(50);
  }
}
