import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, closeSync, existsSync, lstatSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { REPO } from '../../helpers/host.js';
import { freePort } from '../../fixtures/app-releases.js';
import type { KeeperOptions } from '../../../src/helper/sockets/socket-keeper.js';

// The socket keeper alone (src/helper/sockets/socket-keeper.ts, docs/design.md §17): it binds an
// app's sockets or says exactly why it cannot, never accepts a connection itself, and quits on
// request, closing them.

const KEEPER = path.join(REPO, 'dist/src/helper/sockets/socket-keeper.js');

interface Started {
  first: { ok: boolean; code?: string; message?: string; pid?: number };
  dir: string;
  opts: KeeperOptions;
}

// Every keeper a test started, killed when the file ends whatever happened: a keeper outlives
// its parent by design, and one left running would hold its socket (and whatever it inherited).
const started = new Set<number>();
after(() => {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

async function startKeeper(sockets: KeeperOptions['sockets'], o: { uid?: number; dir?: string } = {}): Promise<Started> {
  const dir = o.dir ?? mkdtempSync(path.join(os.tmpdir(), 'steward-keeper-'));
  const opts: KeeperOptions = { app: 'web', root: dir, control: path.join(dir, 'web.sock'), pidFile: path.join(dir, 'web.pid'), sockets };
  // Its stderr to a file of its own, as the helper gives it the app's log: never this process's
  // stderr, which a keeper left running would hold open after the test file ended.
  const errFd = openSync(path.join(dir, 'keeper.err'), 'a');
  const child = spawn(process.execPath, [KEEPER, JSON.stringify(opts)], { stdio: ['ignore', 'pipe', errFd], detached: true, ...(o.uid !== undefined ? { uid: o.uid, gid: o.uid } : {}) });
  closeSync(errFd);
  if (child.pid !== undefined) started.add(child.pid);
  let out = '';
  const stdout = child.stdout as NonNullable<typeof child.stdout>;
  stdout.setEncoding('utf8');
  const line = await new Promise<string>((resolve, reject) => {
    stdout.on('data', (d: string) => {
      out += d;
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
    });
    child.once('exit', (code) => !out.includes('\n') && reject(new Error(`keeper exited ${code} without a word`)));
  });
  child.unref();
  return { first: JSON.parse(line), dir, opts };
}

async function request(control: string, msg: object): Promise<any> {
  const s = net.connect(control);
  s.setEncoding('utf8');
  let buf = '';
  s.write(`${JSON.stringify({ id: 1, ...msg })}\n`);
  return new Promise((resolve, reject) => {
    s.on('data', (d: string) => {
      buf += d;
      if (buf.includes('\n')) {
        s.destroy();
        resolve(JSON.parse(buf.slice(0, buf.indexOf('\n'))));
      }
    });
    s.once('error', reject);
  });
}

// Asks a keeper to quit and waits until it is gone.
async function quit(k: Started): Promise<void> {
  if (k.first.ok) await request(k.opts.control, { op: 'quit' }).catch(() => undefined);
  const pid = k.first.pid;
  for (let i = 0; pid !== undefined && i < 250 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 20));
  rmSync(k.dir, { recursive: true, force: true });
}

test('the keeper binds, listens without accepting, answers hello, and a quit closes the socket', async () => {
  const port = await freePort();
  const k = await startKeeper([{ name: 'http', listen: `127.0.0.1:${port}` }]);
  try {
    assert.equal(k.first.ok, true, JSON.stringify(k.first));
    const hello = await request(k.opts.control, { op: 'hello' });
    assert.deepEqual(hello.sockets, k.opts.sockets);
    assert.equal(lstatSync(k.opts.control).mode & 0o777, 0o600, 'only the helper may talk to it');
    assert.equal(JSON.parse(readFileSync(k.opts.pidFile, 'utf8')).pid, hello.pid);
    // The kernel takes the connection into the socket's queue; nobody accepts it, nobody closes it.
    const c = net.connect(port, '127.0.0.1');
    await new Promise((resolve, reject) => {
      c.once('connect', resolve);
      c.once('error', reject);
    });
    let ended = false;
    c.on('close', () => (ended = true));
    c.on('error', () => (ended = true));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(ended, false, 'the keeper never accepted and closed the connection');
    c.destroy();
  } finally {
    await quit(k);
  }
  await new Promise((r) => setTimeout(r, 100));
  const after = await new Promise<string>((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    c.once('connect', () => (c.destroy(), resolve('connected')));
    c.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
  assert.equal(after, 'ECONNREFUSED', 'quit closed the socket');
});

test('a taken address and one that is not this host\'s are CONFIG_INVALID saying so; nothing stays bound', async () => {
  const port = await freePort();
  const taken = net.createServer();
  await new Promise<void>((r) => taken.listen(port, '127.0.0.1', r));
  try {
    const other = await freePort();
    const k = await startKeeper([
      { name: 'free', listen: `127.0.0.1:${other}` },
      { name: 'http', listen: `127.0.0.1:${port}` },
    ]);
    assert.deepEqual({ ok: k.first.ok, code: k.first.code }, { ok: false, code: 'CONFIG_INVALID' });
    assert.match(k.first.message ?? '', new RegExp(`cannot bind socket http \\(127\\.0\\.0\\.1:${port}\\): the address is taken by another process`));
    await quit(k);
    // The first socket it did bind went with it.
    const s = net.createServer();
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(other, '127.0.0.1', resolve);
    });
    s.close();
  } finally {
    taken.close();
  }
  const nowhere = await startKeeper([{ name: 'http', listen: '192.0.2.1:8080' }]);
  assert.equal(nowhere.first.code, 'CONFIG_INVALID');
  assert.match(nowhere.first.message ?? '', /192\.0\.2\.1:8080\): it is not an address of this host/);
  await quit(nowhere);
});

test('a port below 1024 for a keeper that is not root is CONFIG_INVALID naming the reason', async (t) => {
  const start = Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8').trim());
  if (start <= 80) return t.skip(`net.ipv4.ip_unprivileged_port_start is ${start} here: port 80 needs no privilege`);
  const isRoot = process.getuid?.() === 0;
  let dir: string | undefined;
  if (isRoot) {
    // As the helper run by someone else: the keeper drops to nobody (65534) in a folder of its own.
    dir = mkdtempSync(path.join(os.tmpdir(), 'steward-keeper-'));
    chmodSync(dir, 0o755);
    chownSync(dir, 65534, 65534);
  }
  const k = await startKeeper([{ name: 'http', listen: '127.0.0.1:80' }], isRoot ? { uid: 65534, ...(dir ? { dir } : {}) } : {});
  assert.equal(k.first.code, 'CONFIG_INVALID', JSON.stringify(k.first));
  assert.match(k.first.message ?? '', /cannot bind socket http \(127\.0\.0\.1:80\): permission denied \(a port below 1024 needs the helper to run as root\)/);
  await quit(k);
});

test('a Unix socket is made 0666, a stale one is replaced, and anything else at its path is refused', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-keeper-unix-'));
  try {
    const sock = path.join(dir, 'app.sock');
    const k = await startKeeper([{ name: 'unix', listen: sock }]);
    assert.equal(k.first.ok, true, JSON.stringify(k.first));
    assert.equal(lstatSync(sock).mode & 0o777, 0o666);
    // A power cut: the keeper dies without removing its socket file; the next one replaces it.
    process.kill(k.first.pid as number, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(lstatSync(sock).isSocket());
    const again = await startKeeper([{ name: 'unix', listen: sock }]);
    assert.equal(again.first.ok, true, JSON.stringify(again.first));
    await quit(again);
    for (let i = 0; i < 50 && existsSync(sock); i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(existsSync(sock), false, 'quit removed the socket file');
    writeFileSync(sock, 'not a socket');
    const refused = await startKeeper([{ name: 'unix', listen: sock }]);
    assert.equal(refused.first.code, 'CONFIG_INVALID');
    assert.match(refused.first.message ?? '', /something that is not a socket is there/);
    assert.equal(readFileSync(sock, 'utf8'), 'not a socket', 'the file was left alone');
    await quit(refused);
    await quit(k);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
