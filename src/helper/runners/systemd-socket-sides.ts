// Apps with sockets under the systemd runner (docs/design.md §17, "Under systemd"): the sockets
// are socket units of systemd's, the app's processes the two sides of a unit template that takes
// them (socket-unit-files.ts says which units and why files). systemd passes LISTEN_FDS,
// LISTEN_PID and LISTEN_FDNAMES itself, queues connections while no side runs, and holds the
// sockets whatever the helper does: a restarted helper finds them as they were.
//
// A start writes the unit files it needs (each atomically, and only when its text changed),
// reloads systemd when anything changed (or systemd says it must), then starts the side that
// does not run through a `systemctl start --wait` client, the helper's child until the side
// ends, as the transient units' systemd-run client. How the side ended is then read from systemd
// (ExecMainCode/ExecMainStatus/Result of that very process), else from its journal.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fsp, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { StewardError, toStewardError } from '../../core/errors.js';
import { APP_NAME_RE } from '../../core/name-checks.js';
import type { Clock } from '../../platform/clock.js';
import { runTool } from '../../platform/exec.js';
import { logger } from '../../platform/log.js';
import { readProcIdentity, type ProcIdentity } from '../../platform/proc-identity.js';
import { APP_PATH } from '../../platform/systemd.js';
import { hostPaths } from '../../core/paths.js';
import { buildAppEnv } from './app-env.js';
import { firstAppFd, wrapWithFdOpener } from './app-fds.js';
import { prepareStateDirSync } from './state-dir.js';
import type { AppRunner, AppTarget, ExitInfo, StartSpec, StartedProcess } from './runner.js';
import { systemctl } from './unit-runner.js';
import {
  DROP_IN,
  holderUnitText,
  RUNTIME_UNIT_DIR,
  parseExitFile,
  SIDES,
  signalOf,
  sideDropInText,
  socketUnitBase,
  socketUnitNames,
  socketUnitText,
  templateUnitText,
  type Side,
  type SocketUnitNames,
} from './socket-unit-files.js';
import {
  appUnitOfPid,
  collectOutput,
  isUnitAppAlive,
  isUp,
  lastLines,
  parseJournalExit,
  requireMemoryLimit,
  stopProvenUnits,
  tailUnitLog,
  withKernelOom,
  releaseClients,
  type Clients,
} from './systemd-runner.js';

const debug = logger('helper:systemd-sockets');

export interface SocketSidesOptions {
  clock: Clock;
  isRoot: boolean;
  // The host's root prefix ('' in production): it is in the units' names (socket-unit-files.ts).
  rootPrefix: string;
  stopTimeoutMs?: number;
  startTimeoutMs?: number;
  // Where the unit files go: the real /run/systemd/system but in unit tests.
  unitDir?: string;
}

// The systemd runner with the sockets of apps that have them: such an app's start is one side's,
// everything else is `inner`'s; a stop takes the app's transient unit and both sides.
export function withSocketSides(inner: AppRunner, opts: SocketSidesOptions): AppRunner {
  const clients: Clients = { live: new Set(), released: false };
  const dir = opts.unitDir ?? RUNTIME_UNIT_DIR;
  // The app's sides; `made`: only those with a drop-in (the others never ran since its units
  // were made, and asking systemd about one would load a unit with no command, an error it logs).
  const sideUnits = (app: string, made = false): string[] => {
    if (!APP_NAME_RE.test(app)) return [];
    const base = socketUnitBase(app, opts.rootPrefix);
    return SIDES.map((s) => `${base}@${s}.service`).filter((u) => !made || existsSync(path.join(dir, `${u}.d`, DROP_IN)));
  };
  const timeout = (o?: { timeoutMs?: number }) => o?.timeoutMs ?? opts.stopTimeoutMs ?? 10_000;
  return {
    start: (spec) => (spec.sockets && spec.sockets.length > 0 ? startSide(spec, opts, dir, clients) : inner.start(spec)),
    // One deadline: both stops run at once.
    stop: async (target, o) => {
      await Promise.all([inner.stop(target, o), stopProvenUnits(sideUnits(target.app, true), target, opts.clock, timeout(o))]);
    },
    stopOne: (target, o) => stopOneSide(target, sideUnits(target.app), opts.clock, timeout(o), (t, oo) => inner.stop(t, oo)),
    isAlive: (identity) => inner.isAlive(identity),
    tailLog: (app, sinceMs, lines) => tailUnitLog(app, sinceMs, lines, sideUnits(app)),
    closeSockets: (app) => closeSocketUnits(app, opts.rootPrefix, dir),
    release: () => {
      releaseClients(clients);
      inner.release?.();
    },
  };
}

// The side unit the recorded process is the main of, stopped (the old side of a handover); a
// process of the app's transient unit (its config gained sockets since) is stopped with it.
async function stopOneSide(target: AppTarget, sides: string[], clock: Clock, timeoutMs: number, stopInner: AppRunner['stop']): Promise<void> {
  if (!target.process) return;
  const found = await appUnitOfPid(target.process.pid);
  if (!found) return;
  if (sides.includes(found.unit)) return stopProvenUnits([found.unit], { ...target, instance: null }, clock, timeoutMs);
  return stopInner(target, { timeoutMs });
}

// The state of the units of an app with sockets, in one `systemctl show`.
interface UnitState {
  activeState: string;
  loadState: string;
  mainPid: number;
  needReload: boolean;
}

async function showUnits(units: string[]): Promise<Map<string, UnitState>> {
  const out = await systemctl(['show', '--property=Id,LoadState,ActiveState,SubState,MainPID,NeedDaemonReload', '--', ...units]);
  return parseShowBlocks(out, units);
}

// `systemctl show` of several units: one block per unit, in the order asked, blank lines between.
export function parseShowBlocks(text: string, units: string[]): Map<string, UnitState> {
  const out = new Map<string, UnitState>();
  const blocks = text.split(/\n\s*\n/).filter((b) => b.trim() !== '');
  blocks.forEach((b, i) => {
    const props = new Map<string, string>();
    for (const line of b.split('\n')) {
      const eq = line.indexOf('=');
      if (eq > 0) props.set(line.slice(0, eq), line.slice(eq + 1).trim());
    }
    const unit = units[i];
    if (unit === undefined) return;
    const pid = props.get('MainPID') ?? '';
    out.set(unit, {
      loadState: props.get('LoadState') ?? '',
      activeState: props.get('ActiveState') ?? '',
      mainPid: /^\d+$/.test(pid) ? Number(pid) : 0,
      needReload: props.get('NeedDaemonReload') === 'yes',
    });
  });
  return out;
}

async function startSide(spec: StartSpec, opts: SocketSidesOptions, dir: string, clients: Clients): Promise<StartedProcess> {
  const what = `${spec.app} ${spec.version}`;
  if (!opts.isRoot) throw new StewardError('CONFIG_INVALID', `cannot start ${what} as a systemd unit: the helper is not root`);
  if (!APP_NAME_RE.test(spec.app)) throw new StewardError('CONFIG_INVALID', `cannot start ${what}: not an app name`);
  const st = await fsp.stat(spec.cwd).catch(() => null);
  if (!st?.isDirectory()) throw new StewardError('RELEASE_INVALID', `cannot start ${what}: the folder ${spec.cwd} does not exist`);
  checkProgram(spec, what, buildAppEnv(spec).PATH ?? APP_PATH);
  prepareStateDirSync(spec, true, what);
  const sockets = spec.sockets ?? [];
  const names = socketUnitNames(spec.app, opts.rootPrefix, sockets);
  // A side with no drop-in has never run since the app's units were made (asking systemd about
  // it would load a unit with no command, which it logs as an error).
  const known = SIDES.filter((s) => existsSync(path.join(dir, `${names.sides[s]}.d`, DROP_IN))).map((s) => names.sides[s]);
  const state = await showUnits([...known, names.holder, ...names.sockets]);
  const side = SIDES.find((s) => !isUpState(state.get(names.sides[s])));
  if (side === undefined) throw new StewardError('INTERNAL', `cannot start ${what}: both ${names.sides.a} and ${names.sides.b} run`);
  const other = names.sides[side === 'a' ? 'b' : 'a'];
  const unit = names.sides[side];
  const stopTimeoutMs = opts.stopTimeoutMs ?? 10_000;
  const exitFile = sideExitFile(opts.rootPrefix, unit);
  const files = unitFiles(spec, names, side, stopTimeoutMs, dir, exitFile);
  let changed = false;
  for (const [i, f] of files.entries()) {
    const socketUnit = names.sockets[i];
    // A socket that is open keeps its address until the app is stopped (agentctl stop), as the
    // socket keeper does: its file is not rewritten under it.
    if (f.socket && socketUnit && isUpState(state.get(socketUnit)) && (await readText(f.path)) !== f.text) {
      debug('WARNING app=%s: %s is open with another address than the config says: the change takes effect once the app is stopped and started again', spec.app, socketUnit);
      continue;
    }
    if (await writeIfChanged(f.path, f.text)) changed = true;
  }
  if (changed || [...state.values()].some((s) => s.needReload)) {
    debug('daemon-reload for app=%s (unit files changed: %s)', spec.app, changed);
    await systemctl(['daemon-reload']);
  }
  // A side that failed before is started again as it is (its failed state is reset by the start).
  // Its exit file is the last run's: it goes first.
  await fsp.mkdir(path.dirname(exitFile), { recursive: true, mode: 0o700 });
  await fsp.rm(exitFile, { force: true });
  const startedAt = opts.clock.now();
  const started = await spawnStartClient(spec, unit, opts, what, clients, names, startedAt).catch(async (err) => {
    // A socket that could not be bound, with no side running: nothing of the app is left behind.
    if (!isUpState((await showUnits([other]).catch(() => null))?.get(other)) && (err as StewardError).code === 'CONFIG_INVALID') {
      await closeSocketUnits(spec.app, opts.rootPrefix, dir).catch(() => undefined);
    }
    throw err;
  });
  debug('started app=%s version=%s unit=%s pid=%d', spec.app, spec.version, unit, started.identity.pid);
  return started;
}

function isUpState(st: UnitState | undefined): boolean {
  return st !== undefined && isUp({ ...st, subState: '', nRestarts: 0, controlGroup: '' });
}

// The program of the command must be there: the wrapper's exec would only exit 127 in the unit.
// A bare name is looked up in the app's PATH (`envPath`: a release may set its own), as /bin/sh will.
function checkProgram(spec: StartSpec, what: string, envPath: string): void {
  const [file] = spec.command;
  if (file === undefined || file === '') throw new StewardError('RELEASE_INVALID', `cannot start ${what}: the command is empty`);
  const candidates = file.includes('/') ? [path.resolve(spec.cwd, file)] : envPath.split(':').map((d) => path.resolve(spec.cwd, d || '.', file));
  for (const c of candidates) {
    try {
      if (statSync(c).isFile()) return;
    } catch {
      // not here
    }
  }
  throw new StewardError('RELEASE_INVALID', `cannot start ${what}: ${file} not found`);
}

interface UnitFile {
  path: string;
  text: string;
  socket: boolean;
}

// The files of a start: the socket units (first, in order), the holder, the template and the
// side's drop-in.
function unitFiles(spec: StartSpec, names: SocketUnitNames, side: Side, stopTimeoutMs: number, dir: string, exitFile: string): UnitFile[] {
  const sockets = spec.sockets ?? [];
  const n = sockets.length;
  // The environment as the process runner builds it, the FIFOs' numbers past the sockets; the
  // LISTEN_* variables are systemd's own (Environment= would override them), a release's too.
  const env = buildAppEnv({ ...spec, listen: { fds: sockets.map((_, i) => 3 + i), names: sockets.map((s) => s.name) } });
  delete env.LISTEN_FDS;
  delete env.LISTEN_FDNAMES;
  delete env.LISTEN_PID;
  // Always through /bin/sh: its exec resolves the command as the process runner does (a bare
  // name in PATH, a relative path in the release's folder), and the unit's program is never the
  // release's own text (where systemd would read a leading '-', '@', '+' or '!' as a prefix).
  const command = spec.fds?.ready || spec.fds?.watchdog ? wrapWithFdOpener(spec.command, spec.fds, firstAppFd(n)) : ['/bin/sh', '-c', 'exec "$@"', 'steward-exec', ...spec.command];
  const drop = sideDropInText({
    app: spec.app,
    version: spec.version,
    command,
    cwd: spec.cwd,
    ...(spec.runAs ? { user: { name: spec.runAs.name, gid: spec.runAs.gid } } : {}),
    env,
    ...(spec.memoryMax !== undefined ? { memoryMax: spec.memoryMax } : {}),
    stopTimeoutMs,
    exitFile,
  });
  return [
    ...sockets.map((s, i) => ({ path: path.join(dir, names.sockets[i] as string), text: socketUnitText(spec.app, s, names.holder), socket: true })),
    { path: path.join(dir, names.holder), text: holderUnitText(spec.app, names.sockets), socket: false },
    { path: path.join(dir, names.template), text: templateUnitText(spec.app, names), socket: false },
    { path: path.join(dir, `${names.sides[side]}.d`, DROP_IN), text: drop, socket: false },
  ];
}

async function readText(p: string): Promise<string | null> {
  return fsp.readFile(p, 'utf8').catch(() => null);
}

// Writes `text` to `p` atomically (a temporary file in the same folder, fsynced, renamed over
// it), unless it holds that text already. Whether it wrote. The temporary name ends in no unit
// type: systemd never reads it.
export async function writeIfChanged(p: string, text: string): Promise<boolean> {
  if ((await readText(p)) === text) return false;
  await fsp.mkdir(path.dirname(p), { recursive: true, mode: 0o755 });
  const tmp = path.join(path.dirname(p), `.${path.basename(p)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fh = await fsp.open(tmp, 'wx', 0o644);
    try {
      await fh.writeFile(text);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, p);
  } catch (err) {
    await fsp.rm(tmp, { force: true }).catch(() => undefined);
    throw toStewardError(err, 'IO_ERROR', `cannot write the unit file ${p}`);
  }
  return true;
}

// Starts the side through `systemctl start --wait`, whose client stays the helper's child until
// the side ends; its main process is polled from systemd once the start job is done.
async function spawnStartClient(
  spec: StartSpec,
  unit: string,
  opts: SocketSidesOptions,
  what: string,
  clients: Clients,
  names: SocketUnitNames,
  startedAt: number,
): Promise<StartedProcess> {
  let child: ChildProcess;
  try {
    child = spawn('systemctl', ['start', '--wait', '--', unit], {
      env: { PATH: APP_PATH, LANG: 'C.UTF-8' },
      // Its own process group: a signal to the helper's group does not reach the client.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      shell: false,
    });
  } catch (err) {
    throw toStewardError(err, 'IO_ERROR', `cannot start ${what}: systemctl`);
  }
  const out = collectOutput(child);
  clients.live.add(child);
  const closed = new Promise<{ code: number | null }>((resolve) => {
    child.once('close', (code) => {
      clients.live.delete(child);
      if (!clients.released) resolve({ code });
    });
    child.once('error', (err) => {
      out.add(`spawn failed: ${err.message}\n`);
      resolve({ code: null });
    });
  });
  child.unref();
  const identity = await waitSideMain(unit, closed, opts, what, out, names, startedAt);
  if (spec.memoryMax !== undefined) await requireMemoryLimit(spec, unit, identity, what);
  const exited = closed
    .then(() => sideExit(unit, identity, spec.app, startedAt, opts.clock, sideExitFile(opts.rootPrefix, unit)))
    .then((exit) => (spec.memoryMax !== undefined ? withKernelOom(exit, identity.pid, startedAt) : exit));
  return { identity, startedAt, exited };
}

// The side's MainPID as a process identity, polled until systemd has one. A client that ends
// first: the start failed (a socket that cannot be bound, a program that cannot run), or the app
// exited at once.
async function waitSideMain(
  unit: string,
  closed: Promise<{ code: number | null }>,
  opts: SocketSidesOptions,
  what: string,
  out: { text(): string },
  names: SocketUnitNames,
  startedAt: number,
): Promise<ProcIdentity> {
  let done: { code: number | null } | null = null;
  void closed.then((c) => (done = c));
  const deadline = opts.clock.monotonic() + (opts.startTimeoutMs ?? 10_000);
  for (;;) {
    const st = (await showUnits([unit])).get(unit);
    if (st && st.mainPid > 0 && isUpState(st)) {
      const id = await readProcIdentity(st.mainPid);
      if (id && (await appUnitOfPid(st.mainPid))?.unit === unit) return id;
    }
    if (done !== null) {
      const bind = await socketFailure(names, startedAt);
      if (bind) throw bind;
      // How it ended goes with the error: the supervisor records it as that start's exit.
      const exit = parseExitFile(await fsp.readFile(sideExitFile(opts.rootPrefix, unit), 'utf8').catch(() => '')) ?? (await readSideExit(unit, null));
      const text = lastLines(out.text());
      throw new StewardError('RELEASE_INVALID', `cannot start ${what} as ${unit}: ${text || 'it exited at once'}${exit ? ` (${exitText(exit)})` : ''}`, exit ? { details: { exit } } : {});
    }
    if (opts.clock.monotonic() > deadline) {
      throw new StewardError('IO_ERROR', `cannot start ${what}: ${unit} has no main process after ${opts.startTimeoutMs ?? 10_000} ms`);
    }
    await opts.clock.sleep(20);
  }
}

function exitText(e: ExitInfo): string {
  return e.code !== null ? `code ${e.code}` : e.signal ? `signal ${e.signal}` : 'unknown';
}

// A socket unit that could not bind its address since `sinceMs`, told as the socket keeper
// tells it (CONFIG_INVALID), from systemd's own line: "Failed to create listening socket
// (127.0.0.1:80): Address already in use".
async function socketFailure(names: SocketUnitNames, sinceMs: number): Promise<StewardError | null> {
  const failed = await showUnits(names.sockets).catch(() => null);
  for (const unit of names.sockets) {
    if (failed?.get(unit)?.activeState !== 'failed') continue;
    const since = (Math.max(0, sinceMs - 1000) / 1000).toFixed(3);
    const r = await runTool('journalctl', ['-u', unit, `--since=@${since}`, '-n', '50', '-o', 'cat', '--no-pager', '-q'], { env: { PATH: APP_PATH, LANG: 'C.UTF-8' }, timeoutMs: 10_000 });
    const name = unit.slice(unit.indexOf('@') + 1, -'.socket'.length);
    await systemctl(['reset-failed', '--', unit]).catch(() => undefined);
    return new StewardError('CONFIG_INVALID', `cannot bind socket ${name}: ${socketWhy(r.stdout)}`);
  }
  return null;
}

// systemd's reason for a socket it could not open, in the socket keeper's words where they apply.
export function socketWhy(journal: string): string {
  const m = [...journal.matchAll(/Failed to create listening socket \((.*)\): (.*)$/gm)].at(-1);
  if (!m) return 'systemd could not open it (see its journal)';
  const [, addr, err = ''] = m;
  const why = /Address already in use/.test(err)
    ? 'the address is taken by another process'
    : /Cannot assign requested address/.test(err)
      ? 'it is not an address of this host'
      : /Permission denied/.test(err)
        ? 'permission denied'
        : err.trim();
  return `(${addr}) ${why}`;
}

// Where a side's ExecStopPost= writes how its main process ended: the host's run folder.
export function sideExitFile(rootPrefix: string, unit: string): string {
  return path.join(hostPaths(rootPrefix).runDir, 'unit-exits', unit);
}

// How the side's process ended, once its client ended: the line its ExecStopPost= wrote (as
// root), else systemd's ExecMain* of that very process while the unit is still loaded, else
// systemd's own journal line about it. A client that ended while the side still ran (killed)
// says nothing: the side is watched until it is gone.
async function sideExit(unit: string, identity: ProcIdentity, app: string, startedAt: number, clock: Clock, exitFile: string): Promise<ExitInfo> {
  for (;;) {
    const alive = await isUnitAppAlive(identity).catch(() => true);
    if (!alive) break;
    await clock.sleep(500);
  }
  // The unit is inactive once its ExecStopPost= has run: the file is whole by now, if it is there.
  const line = await fsp.readFile(exitFile, 'utf8').catch(() => '');
  const fromFile = parseExitFile(line);
  if (fromFile) return fromFile;
  const exit = await readSideExit(unit, identity.pid);
  if (exit) return exit;
  const journal = await runTool('journalctl', ['-u', unit, `--since=@${(Math.max(0, startedAt) / 1000).toFixed(3)}`, '-n', '50', '-o', 'cat', '--no-pager', '-q'], {
    env: { PATH: APP_PATH, LANG: 'C.UTF-8' },
    timeoutMs: 10_000,
  });
  debug('no exit status of app=%s pid=%d from systemd: from its journal', app, identity.pid);
  return parseJournalExit(journal.stdout) ?? { code: null, signal: null };
}

// ExecMainCode (CLD_EXITED 1, CLD_KILLED 2, CLD_DUMPED 3), ExecMainStatus and Result of the
// unit's last main process, when it is `pid` (null: any).
async function readSideExit(unit: string, pid: number | null): Promise<ExitInfo | null> {
  const text = await systemctl(['show', '--property=ExecMainPID,ExecMainCode,ExecMainStatus,Result', '--', unit]).catch(() => '');
  return parseSideExit(text, pid);
}

export function parseSideExit(text: string, pid: number | null): ExitInfo | null {
  const props = new Map(text.split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).trim()] as const));
  const mainPid = Number(props.get('ExecMainPID') ?? '0');
  if (!Number.isSafeInteger(mainPid) || mainPid <= 0 || (pid !== null && mainPid !== pid)) return null;
  const how = props.get('ExecMainCode');
  const status = Number(props.get('ExecMainStatus') ?? 'NaN');
  if (!Number.isSafeInteger(status)) return null;
  const oom = props.get('Result') === 'oom-kill' ? { reason: 'OOM' as const } : {};
  if (how === '1') return { code: status, signal: null, ...oom };
  if (how === '2' || how === '3') return { code: null, signal: signalOf(status), ...oom };
  return null;
}

// Closes the app's sockets: the socket units and the holder are stopped, their files removed,
// and the template and the sides' drop-ins with them when no side runs (one that runs without
// proof is not ours to stop, and keeps its files). Nothing there: nothing to do.
export async function closeSocketUnits(app: string, rootPrefix: string, dir: string): Promise<void> {
  if (!APP_NAME_RE.test(app)) return;
  const base = socketUnitBase(app, rootPrefix);
  const entries = await fsp.readdir(dir).catch(() => [] as string[]);
  const sockets = entries.filter((e) => e.startsWith(`${base}@`) && e.endsWith('.socket'));
  const holder = `${base}.hold.service`;
  const sides = SIDES.map((s) => `${base}@${s}.service`);
  const ours = [...sockets, holder, `${base}@.service`, ...sides.map((s) => `${s}.d`)];
  if (!ours.some((e) => entries.includes(e))) return;
  debug('closing the sockets of app=%s: %s', app, sockets.join(' '));
  await systemctl(['stop', '--', ...sockets, holder]);
  const made = sides.filter((s) => entries.includes(`${s}.d`));
  const state = made.length > 0 ? await showUnits(made) : new Map<string, UnitState>();
  const running = sides.some((s) => isUpState(state.get(s)));
  const remove = [...sockets, holder, ...(running ? [] : [`${base}@.service`, ...sides.map((s) => `${s}.d`)])];
  for (const e of remove) await fsp.rm(path.join(dir, e), { recursive: true, force: true });
  if (!running) for (const side of sides) await fsp.rm(sideExitFile(rootPrefix, side), { force: true });
  await systemctl(['daemon-reload']);
  // Units that failed stay loaded until reset: forget them with their files.
  await systemctl(['reset-failed', '--', ...sockets, holder, ...(running ? [] : sides)]).catch(() => undefined);
}

