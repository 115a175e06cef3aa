// The socket keeper of one app (docs/design.md §17 "Zero-downtime handover", without systemd): a
// small process the helper starts, detached, that binds the app's listening sockets and starts the
// app's processes with them, as systemd passes a socket unit's (LISTEN_FDS). It outlives the
// helper, so the sockets stay open across a restart of the helper, an update, a rollback and a
// respawn: while no process of the app accepts, the kernel queues connections on them and none is
// refused. Why a process of its own: Node cannot hand an fd to a process it did not start (no
// SCM_RIGHTS outside its own IPC channel), so whoever holds the sockets must start the processes.
//
// It listens on a Unix socket in the helper's run folder (keepers/<app>.sock, 0700 root's folder)
// for JSON lines: {id, op: "hello"} -> its pid and sockets; {id, op: "start", spec} -> the process
// runner's start (the same code, cgroups and memory limits as the helper's own spawns) with the
// sockets at fds 3 and up; {id, op: "quit"} -> closes the sockets and exits. It tells every
// connection of each exit of a process it started: {op: "exit", pid, info}.
//
// It never accepts a connection on the app's sockets itself: they are only bound here, and put in
// the listening state by a throwaway child (listen() through libuv would accept in this process).
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, lstatSync, openSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import net from 'node:net';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { getSystemErrorName } from 'node:util';
import { StewardError } from '../../core/errors.js';
import { parseListenAddress, type SocketDecl } from '../../core/listen-address.js';
import { systemClock } from '../../platform/clock.js';
import { readProcIdentity } from '../../platform/proc-identity.js';
import { findCgroupHome } from '../runners/app-cgroup.js';
import { findMemoryHome } from '../runners/memory-cgroup.js';
import { createProcessRunner } from '../runners/process-runner.js';
import type { StartSpec } from '../runners/runner.js';

export interface KeeperOptions {
  app: string;
  // The host's root prefix ('' in production): the cgroups of its apps (app-cgroup.ts).
  root: string;
  // keepers/<app>.sock and keepers/<app>.pid.
  control: string;
  pidFile: string;
  sockets: SocketDecl[];
}

// The backlog of every socket: the kernel caps it at net.core.somaxconn.
const BACKLOG = 4096;

interface Handle {
  fd: number;
  close(): void;
}

type CreateServerHandle = (address: string | null, port: number, addressType: number, fd?: number, flags?: number) => Handle | number;

// Binds one socket without listening, or throws a StewardError saying why (EADDRINUSE: taken;
// EADDRNOTAVAIL: not an address of this host; EACCES: a port below 1024 without root).
function bindOne(decl: SocketDecl): Handle {
  const create = (net as unknown as { _createServerHandle?: CreateServerHandle })._createServerHandle;
  if (typeof create !== 'function') throw new StewardError('INTERNAL', `this Node (${process.version}) has no net._createServerHandle: sockets cannot be kept`);
  const addr = parseListenAddress(decl.listen);
  if (typeof addr === 'string') throw new StewardError('CONFIG_INVALID', `socket ${decl.name}: ${addr}`);
  if (addr.kind === 'unix') removeStaleUnixSocket(addr.path, decl.name);
  let h = addr.kind === 'unix' ? create(addr.path, -1, -1) : create(addr.host, addr.port, addr.family, undefined, addr.family === 6 ? 1 /* ipv6Only */ : 0);
  // libuv defers a TCP bind's EADDRINUSE to listen(), which happens elsewhere (listenAll): a
  // socket that is not bound to its port here never got it (listen() would bind a random one).
  if (typeof h !== 'number' && addr.kind === 'tcp' && boundPort(h) !== addr.port) {
    h.close();
    h = EADDRINUSE;
  }
  if (typeof h === 'number') {
    const code = errnoName(h);
    const why =
      code === 'EADDRINUSE'
        ? 'the address is taken by another process'
        : code === 'EADDRNOTAVAIL'
          ? 'it is not an address of this host'
          : code === 'EACCES'
            ? 'permission denied (a port below 1024 needs the helper to run as root)'
            : code;
    throw new StewardError('CONFIG_INVALID', `cannot bind socket ${decl.name} (${decl.listen}): ${why}`, { details: { errno: code } });
  }
  // Anyone may connect to a Unix socket of an app, as systemd's SocketMode= default (0666).
  if (addr.kind === 'unix') chmodSync(addr.path, 0o666);
  return h;
}

const EADDRINUSE = -(osConstants.errno.EADDRINUSE as number);

// The port a TCP handle is bound to (0: none).
function boundPort(h: Handle): number {
  const out: { port?: number } = {};
  const err = (h as unknown as { getsockname?: (o: object) => number }).getsockname?.(out);
  return err === 0 && typeof out.port === 'number' ? out.port : 0;
}

// A socket file left by an earlier keeper (a power cut) is removed; anything else at the path is
// refused, never replaced.
function removeStaleUnixSocket(p: string, name: string): void {
  let st;
  try {
    st = lstatSync(p);
  } catch {
    return;
  }
  if (!st.isSocket()) throw new StewardError('CONFIG_INVALID', `cannot bind socket ${name} (${p}): something that is not a socket is there`);
  unlinkSync(p);
}

function errnoName(n: number): string {
  try {
    return getSystemErrorName(n);
  } catch {
    return `errno ${n}`;
  }
}

// Puts the bound sockets into the listening state in a child that exits at once: listen() is one
// system call, and the child's event loop never runs, so it accepts nothing. From then on the
// socket listens for as long as any process holds it.
function listenAll(handles: Handle[]): void {
  const script = `const net=require('net');for(let i=0;i<${handles.length};i++){const h=net._createServerHandle(null,0,4,3+i);if(typeof h==='number')process.exit(10+i);const e=h.listen(${BACKLOG});if(e)process.exit(40+i)}process.exit(0)`;
  const r = spawnSync(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe', ...handles.map((h) => h.fd)], timeout: 30_000 });
  if (r.status !== 0) throw new StewardError('INTERNAL', `could not make the sockets listen (status ${r.status}${r.stderr?.length ? `: ${r.stderr.toString().slice(0, 200)}` : ''})`);
}

// Writes one JSON line to the helper that started it (fd 1, then closed).
function tellParent(msg: unknown): void {
  try {
    writeSync(1, `${JSON.stringify(msg)}\n`);
    closeSync(1);
    // Whatever writes to stdout later goes nowhere rather than to a closed pipe.
    openSync('/dev/null', 'w');
  } catch {
    // the helper is gone: nothing to tell
  }
}

export async function keeperMain(opts: KeeperOptions): Promise<void> {
  let handles: Handle[];
  try {
    handles = opts.sockets.map(bindOne);
    listenAll(handles);
  } catch (err) {
    const e = err instanceof StewardError ? err : new StewardError('INTERNAL', (err as Error).message);
    tellParent({ ok: false, code: e.code, message: e.message });
    process.exit(1);
  }
  const fds = handles.map((h) => h.fd);
  const names = opts.sockets.map((s) => s.name);
  const isRoot = process.getuid?.() === 0;
  const cgroups = findCgroupHome(opts.root);
  const runner = createProcessRunner({ clock: systemClock, isRoot, cgroups, memory: findMemoryHome(opts.root, cgroups) });
  const conns = new Set<net.Socket>();
  const broadcast = (msg: unknown) => {
    const line = `${JSON.stringify(msg)}\n`;
    for (const c of conns) c.write(line);
  };
  const quit = () => {
    // Closing a Unix socket's handle removes its file (libuv does); what is at the path after
    // that is someone else's, and is left alone unless it is a socket.
    for (const h of handles) h.close();
    for (const s of opts.sockets) {
      const a = parseListenAddress(s.listen);
      if (typeof a !== 'string' && a.kind === 'unix') {
        try {
          if (lstatSync(a.path).isSocket()) unlinkSync(a.path);
        } catch {
          // gone already
        }
      }
    }
    try {
      unlinkSync(opts.control);
      unlinkSync(opts.pidFile);
    } catch {
      // gone already
    }
    process.exit(0);
  };
  const serve = async (c: net.Socket, req: { id?: unknown; op?: unknown; spec?: unknown }) => {
    const id = typeof req.id === 'number' ? req.id : 0;
    const answer = (m: object) => c.write(`${JSON.stringify({ id, ...m })}\n`);
    if (req.op === 'hello') return answer({ ok: true, pid: process.pid, app: opts.app, sockets: opts.sockets });
    if (req.op === 'quit') {
      answer({ ok: true });
      setImmediate(quit);
      return;
    }
    if (req.op !== 'start' || typeof req.spec !== 'object' || req.spec === null) return answer({ ok: false, code: 'INTERNAL', message: 'unknown request' });
    const spec = req.spec as StartSpec;
    if (spec.app !== opts.app) return answer({ ok: false, code: 'INTERNAL', message: `this keeper is app ${opts.app}'s, not ${String(spec.app)}'s` });
    try {
      const proc = await runner.start({ ...spec, listen: { fds, names } });
      answer({ ok: true, identity: proc.identity, startedAt: proc.startedAt });
      void proc.exited.then((info) => broadcast({ op: 'exit', pid: proc.identity.pid, info }));
    } catch (err) {
      const e = err instanceof StewardError ? err : new StewardError('INTERNAL', (err as Error).message);
      answer({ ok: false, code: e.code, message: e.message });
    }
  };
  const server = net.createServer((c) => {
    conns.add(c);
    let buf = '';
    c.setEncoding('utf8');
    c.on('data', (d: string) => {
      buf += d;
      if (buf.length > 1024 * 1024) c.destroy();
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let req;
        try {
          req = JSON.parse(line);
        } catch {
          c.destroy();
          return;
        }
        void serve(c, req);
      }
    });
    c.on('error', () => c.destroy());
    c.on('close', () => conns.delete(c));
  });
  try {
    unlinkSync(opts.control);
  } catch {
    // none left
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.control, resolve);
  }).catch((err) => {
    tellParent({ ok: false, code: 'IO_ERROR', message: `cannot listen on ${opts.control}: ${(err as Error).message}` });
    process.exit(1);
  });
  chmodSync(opts.control, 0o600);
  const me = await readProcIdentity(process.pid);
  writeFileSync(opts.pidFile, JSON.stringify(me), { mode: 0o600 });
  process.on('SIGTERM', quit);
  process.on('SIGHUP', () => {});
  tellParent({ ok: true, pid: process.pid });
}

// As its own program: `node socket-keeper.js '<KeeperOptions as JSON>'`.
const isEntry = process.argv[1] !== undefined && path.basename(process.argv[1]) === 'socket-keeper.js';
if (isEntry) {
  process.title = 'steward-socket-keeper';
  void keeperMain(JSON.parse(process.argv[2] ?? '{}') as KeeperOptions).catch((err) => {
    process.stderr.write(`steward-socket-keeper: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
