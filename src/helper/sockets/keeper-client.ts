// The helper's side of the socket keepers (socket-keeper.ts; docs/design.md §17 "Zero-downtime
// handover"): one keeper per app with `sockets`, found again by a restarted helper through its
// control socket, started when there is none. The processes of such an app are started by its
// keeper (the holder of the sockets); the helper stops them as any other (the same proof: the
// app's cgroup or instance token), and hears of their exits from the keeper while it is connected,
// else by polling them as adopted processes.
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, closeSync, readFileSync, constants as C } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { StewardError } from '../../core/errors.js';
import type { ReasonCode } from '../../core/errors.js';
import type { SocketDecl } from '../../core/listen-address.js';
import type { HostPaths } from '../../core/paths.js';
import { logger } from '../../platform/log.js';
import { isSameProcessAlive, type ProcIdentity } from '../../platform/proc-identity.js';
import type { AppRunner, ExitInfo, StartSpec, StartedProcess } from '../runners/runner.js';
import type { KeeperOptions } from './socket-keeper.js';

const log = logger('helper:sockets');

// How long a keeper may take to bind its sockets and say so.
const KEEPER_START_MS = 15_000;
// How often a process whose keeper went away is checked for its exit.
const ORPHAN_POLL_MS = 200;

export function keepersDir(paths: HostPaths): string {
  return path.join(paths.runDir, 'keepers');
}

interface Pending {
  resolve(msg: Record<string, unknown>): void;
  reject(err: Error): void;
}

// One connection to one app's keeper.
class KeeperConn {
  private next = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly exits = new Map<number, (info: ExitInfo) => void>();
  private buf = '';
  closed = false;
  private readonly closeListeners: Array<() => void> = [];

  constructor(private readonly sock: net.Socket) {
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => this.data(d));
    sock.on('error', () => sock.destroy());
    sock.on('close', () => {
      this.closed = true;
      for (const p of this.pending.values()) p.reject(new StewardError('IO_ERROR', 'the socket keeper went away'));
      this.pending.clear();
      for (const fn of this.closeListeners.splice(0)) fn();
    });
    // A keeper never keeps the helper running.
    sock.unref();
  }

  private data(d: string): void {
    this.buf += d;
    for (let nl = this.buf.indexOf('\n'); nl >= 0; nl = this.buf.indexOf('\n')) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(line) as Record<string, unknown>;
      } catch {
        this.sock.destroy();
        return;
      }
      if (msg.op === 'exit' && typeof msg.pid === 'number') {
        const hear = this.exits.get(msg.pid);
        this.exits.delete(msg.pid);
        const info = exitInfoOf(msg.info);
        if (hear) hear(info);
        else this.remember(msg.pid, info);
        continue;
      }
      const p = typeof msg.id === 'number' ? this.pending.get(msg.id) : undefined;
      if (p && typeof msg.id === 'number') {
        this.pending.delete(msg.id);
        p.resolve(msg);
      }
    }
  }

  request(msg: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (this.closed) return Promise.reject(new StewardError('IO_ERROR', 'the socket keeper went away'));
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.sock.write(`${JSON.stringify({ ...msg, id })}\n`);
    });
  }

  // Calls `fn` once the connection has closed (at once if it has).
  whenClosed(fn: () => void): void {
    if (this.closed) fn();
    else this.closeListeners.push(fn);
  }

  onExit(pid: number, hear: (info: ExitInfo) => void): void {
    const known = this.recent.get(pid);
    if (known) {
      this.recent.delete(pid);
      hear(known);
      return;
    }
    this.exits.set(pid, hear);
  }

  // Exits nobody was listening for yet (a process the helper watches again right after), the
  // last few only.
  private readonly recent = new Map<number, ExitInfo>();
  private remember(pid: number, info: ExitInfo): void {
    this.recent.set(pid, info);
    if (this.recent.size > 64) this.recent.delete(this.recent.keys().next().value as number);
  }

  // The processes whose exit this connection would have told.
  takeWaiting(): number[] {
    const pids = [...this.exits.keys()];
    this.exits.clear();
    return pids;
  }

  close(): void {
    this.sock.destroy();
  }
}

function exitInfoOf(v: unknown): ExitInfo {
  const o = (v ?? {}) as Record<string, unknown>;
  return {
    code: typeof o.code === 'number' ? o.code : null,
    signal: typeof o.signal === 'string' ? o.signal : null,
    ...(o.reason === 'OOM' || o.reason === 'WATCHDOG' || o.reason === 'LIVENESS_FAILED' ? { reason: o.reason } : {}),
  };
}

export interface SocketKeepersOptions {
  paths: HostPaths;
  // The process runner's liveness check, for a process whose keeper went away.
  isAlive(identity: ProcIdentity): Promise<boolean>;
}

// The keepers of one helper.
export class SocketKeepers {
  private readonly conns = new Map<string, Promise<KeeperConn>>();

  constructor(private readonly opts: SocketKeepersOptions) {}

  private control(app: string): string {
    return path.join(keepersDir(this.opts.paths), `${app}.sock`);
  }

  private pidFile(app: string): string {
    return path.join(keepersDir(this.opts.paths), `${app}.pid`);
  }

  // The connection to the app's keeper, started if none runs.
  private conn(app: string, sockets: SocketDecl[]): Promise<KeeperConn> {
    const have = this.conns.get(app);
    if (have) return have;
    return this.track(app, this.connectOrStart(app, sockets));
  }

  // Keeps `p` as the app's connection until it fails or closes.
  private track(app: string, p: Promise<KeeperConn>): Promise<KeeperConn> {
    this.conns.set(app, p);
    const forget = () => {
      if (this.conns.get(app) === p) this.conns.delete(app);
    };
    p.then((c) => c.whenClosed(forget), forget);
    return p;
  }

  private async connectOrStart(app: string, sockets: SocketDecl[]): Promise<KeeperConn> {
    const found = await this.connect(app).catch(() => null);
    if (found) {
      const hello = await found.request({ op: 'hello' });
      const held = JSON.stringify(hello.sockets);
      if (held !== JSON.stringify(sockets)) {
        // The sockets cannot change under a running app without dropping connections: the
        // keeper keeps what it holds until the app is stopped (agentctl stop), and says so.
        log('WARNING app=%s: its socket keeper holds %s, the config says %s: the change takes effect once the app is stopped and started again', app, held, JSON.stringify(sockets));
      }
      return found;
    }
    await this.startKeeper(app, sockets);
    const c = await this.connect(app);
    await c.request({ op: 'hello' });
    return c;
  }

  private connect(app: string): Promise<KeeperConn> {
    return new Promise((resolve, reject) => {
      const sock = net.connect(this.control(app));
      sock.once('connect', () => resolve(new KeeperConn(sock)));
      sock.once('error', reject);
    });
  }

  private async startKeeper(app: string, sockets: SocketDecl[]): Promise<void> {
    const dir = keepersDir(this.opts.paths);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const opts: KeeperOptions = { app, root: this.opts.paths.root, control: this.control(app), pidFile: this.pidFile(app), sockets };
    const script = fileURLToPath(new URL('./socket-keeper.js', import.meta.url));
    // Its own errors (a crash) go to the app's log, beside the app's output.
    const errFd = openAppend(path.join(this.opts.paths.logDir, `${app}.log`));
    let child;
    try {
      child = spawn(process.execPath, [script, JSON.stringify(opts)], { detached: true, stdio: ['ignore', 'pipe', errFd], cwd: '/', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    } finally {
      if (errFd >= 0) closeSync(errFd);
    }
    const first = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new StewardError('INTERNAL', `the socket keeper of ${app} did not start within ${KEEPER_START_MS} ms`)), KEEPER_START_MS);
      child.stdout?.setEncoding('utf8');
      child.stdout?.on('data', (d: string) => {
        out += d;
        const nl = out.indexOf('\n');
        if (nl >= 0) {
          clearTimeout(timer);
          resolve(out.slice(0, nl));
        }
      });
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        if (!out.includes('\n')) reject(new StewardError('INTERNAL', `the socket keeper of ${app} exited (${code}) before it said why`));
      });
    });
    child.stdout?.destroy();
    child.unref();
    const msg = JSON.parse(first) as { ok: boolean; code?: string; message?: string; pid?: number };
    if (!msg.ok) throw new StewardError((msg.code ?? 'INTERNAL') as ReasonCode, `app ${app}: ${msg.message ?? 'its socket keeper failed'}`);
    log('started the socket keeper of app=%s pid=%d sockets=%s', app, msg.pid, sockets.map((s) => `${s.name}=${s.listen}`).join(','));
  }

  // Starts a process of the app through its keeper (StartSpec.sockets).
  async start(spec: StartSpec): Promise<StartedProcess> {
    const sockets = spec.sockets ?? [];
    const c = await this.conn(spec.app, sockets);
    const { sockets: _s, ...plain } = spec;
    const r = await c.request({ op: 'start', spec: plain });
    if (r.ok !== true) throw new StewardError(((r.code as string) ?? 'INTERNAL') as ReasonCode, String(r.message ?? 'the socket keeper could not start the app'));
    const identity = r.identity as ProcIdentity;
    return { identity, startedAt: r.startedAt as number, exited: this.exitOf(c, identity) };
  }

  // Hears the exit of a process of the app that the keeper started (for an earlier helper, or kept
  // by a withdrawn handover): null when no keeper of the app answers, or the process is gone.
  async reattach(app: string, identity: ProcIdentity): Promise<StartedProcess | null> {
    // A keeper that runs is connected to; none is started.
    const c = await (this.conns.get(app) ?? this.track(app, this.connect(app))).catch(() => null);
    if (!c) return null;
    if (!(await this.opts.isAlive(identity).catch(() => false))) return null;
    return { identity, startedAt: Date.now(), exited: this.exitOf(c, identity) };
  }

  private exitOf(c: KeeperConn, identity: ProcIdentity): Promise<ExitInfo> {
    return new Promise<ExitInfo>((resolve) => {
      let heard = false;
      c.onExit(identity.pid, (info) => {
        heard = true;
        resolve(info);
      });
      // The keeper went away (the helper's own close, or the keeper's crash) before telling the
      // exit: the process may run on; its end is then found by polling it.
      c.whenClosed(() => {
        if (!heard) void this.pollUntilGone(identity).then(() => resolve({ code: null, signal: null }));
      });
    });
  }

  private async pollUntilGone(identity: ProcIdentity): Promise<void> {
    for (;;) {
      if (!(await this.opts.isAlive(identity).catch(() => false))) return;
      await new Promise((r) => setTimeout(r, ORPHAN_POLL_MS).unref());
    }
  }

  // Closes the app's sockets: its keeper exits. Nothing runs: nothing to do.
  async closeSockets(app: string): Promise<void> {
    const c = await (this.conns.get(app) ?? this.connect(app)).catch(() => null);
    this.conns.delete(app);
    if (!c) return killStaleKeeper(this.pidFile(app));
    // Done once the keeper is gone, not once it said it goes: its answer comes before it closes
    // the sockets, and a stop that returned then would leave them accepting for a moment. The end
    // of its connection is its exit; one that takes longer than QUIT_WAIT_MS is killed.
    const gone = new Promise<void>((resolve) => c.whenClosed(resolve));
    await c.request({ op: 'quit' }).catch(() => undefined);
    const quit = await Promise.race([gone.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), QUIT_WAIT_MS).unref())]);
    c.close();
    if (!quit) await killStaleKeeper(this.pidFile(app));
  }

  // The helper stops: its connections go; the keepers run on.
  release(): void {
    for (const p of this.conns.values()) void p.then((c) => c.close(), () => undefined);
    this.conns.clear();
  }
}

// How long a keeper told to quit has to exit before it is killed.
const QUIT_WAIT_MS = 5000;

// A keeper that does not answer (hung) but is recorded: ended by its recorded identity.
async function killStaleKeeper(pidFile: string): Promise<void> {
  let id: ProcIdentity;
  try {
    id = JSON.parse(readFileSync(pidFile, 'utf8')) as ProcIdentity;
  } catch {
    return;
  }
  if (typeof id?.pid === 'number' && (await isSameProcessAlive(id))) {
    try {
      process.kill(id.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

function openAppend(file: string): number {
  try {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o750 });
    return openSync(file, C.O_WRONLY | C.O_APPEND | C.O_CREAT | C.O_NOFOLLOW | C.O_NONBLOCK, 0o640);
  } catch {
    return -1;
  }
}

// The app runner of a helper with socket keepers: an app with sockets is started by its keeper,
// everything else as `inner` does; stops and checks are `inner`'s (one proof for both).
export function withSocketKeepers(inner: AppRunner, keepers: SocketKeepers): AppRunner {
  const out: AppRunner = {
    start: (spec) => (spec.sockets && spec.sockets.length > 0 ? keepers.start(spec) : inner.start(spec)),
    stop: (target, o) => inner.stop(target, o),
    isAlive: (identity) => inner.isAlive(identity),
    closeSockets: (app) => keepers.closeSockets(app),
    reattach: (app, identity) => keepers.reattach(app, identity),
    release: () => {
      keepers.release();
      inner.release?.();
    },
  };
  if (inner.stopOne) out.stopOne = inner.stopOne.bind(inner);
  if (inner.tailLog) out.tailLog = inner.tailLog.bind(inner);
  return out;
}
