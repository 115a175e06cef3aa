import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { environOf, useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type HelperProcess } from '../helpers/host.js';
import { freePort, releaseArgs, type AppBehavior } from '../fixtures/app-releases.js';
import { RequestLoops, type WindowFigures } from '../../bench/lib/request-loops.js';
import { appStatusOf } from '../helpers/helper-status.js';
import { currentLink } from '../../src/core/paths.js';
import { readRunRecord } from '../../src/helper/runners/run-record.js';
import { keepersDir } from '../../src/helper/sockets/keeper-client.js';

// The zero-downtime handover (docs/design.md §17) with a real helper, the detached process runner and
// a socket keeper: under a steady load of 8 request loops (each a GET on a fresh connection, the
// next as soon as the last ended), 20 updates and 20 rollbacks, a respawn after a crash, a version
// that is never ready and a restart of the helper itself lose no request at all. The same update
// of an app without `sockets` shows what one that does not opt in gets.

const LOOPS = 8;
// Each loop waits this long after an answer before its next request: 8 clients at once all the
// same, at a rate a 2-core machine running the rest of the suite beside it can afford.
const PACE_MS = 10;
const restart = { baseMs: 100, capMs: 1000, maxAttempts: 10, healthyMs: 60_000 };
let port: number;
let plainPort: number;
let takenPort: number;
const host = useHost(after, { apps: {} });
let helper: HelperProcess;
let loops: RequestLoops;

const ready: AppBehavior = { ready: 'after', readyAfterMs: 50, stableMs: 200, watchMs: 0, crashOnUsr2: true };

const update = (app: string, version: string, p: number, behavior: AppBehavior = ready) =>
  agentctl(host, ['update', app, version, ...releaseArgs(host.scratch, app, version, p, behavior), '--json']);

// What one operation cost the clients: from its start to 300 ms after it returned.
async function measured(op: () => Promise<void>, l: RequestLoops = loops): Promise<WindowFigures> {
  const from = performance.now();
  await op();
  await new Promise((r) => setTimeout(r, 300));
  return l.figures(from, performance.now());
}

const sum = (xs: WindowFigures[]) => xs.reduce((n, x) => n + x.failed, 0);

before(async () => {
  port = await freePort();
  plainPort = await freePort();
  takenPort = await freePort();
  host.writeConfig({
    apps: {
      web: processApp({ stopTimeoutMs: 5000, restart, sockets: [{ name: 'http', listen: `127.0.0.1:${port}` }] }),
      plain: processApp({ stopTimeoutMs: 5000, restart }),
      taken: processApp({ sockets: [{ name: 'http', listen: `127.0.0.1:${takenPort}` }] }),
      nowhere: processApp({ sockets: [{ name: 'http', listen: '192.0.2.1:8080' }] }),
    },
    supervisor: { sweepMs: 500, pollMs: 100 },
  });
  helper = await host.startHelper();
  const first = await update('web', '1.0.0', port);
  assert.equal(first.json?.outcome, 'active', first.stdout + first.stderr);
  loops = new RequestLoops(`http://127.0.0.1:${port}/`, LOOPS, PACE_MS);
  loops.start();
  host.stopFirst(() => loops.stop());
  await new Promise((r) => setTimeout(r, 500));
});

test('the app gets its socket as fd 3 with LISTEN_FDS, LISTEN_PID of its own and LISTEN_FDNAMES', async () => {
  const st = await appStatusOf(host.root, 'web');
  const pid = st.supervisor?.pid as number;
  const env = environOf(`/proc/${pid}/environ`);
  assert.equal(env.get('LISTEN_FDS'), '1');
  assert.equal(env.get('LISTEN_PID'), String(pid), 'LISTEN_PID is the app process itself (after the exec)');
  assert.equal(env.get('LISTEN_FDNAMES'), 'http');
  assert.equal(env.get('STEWARD_READY_FD'), '4', 'the readiness fd comes after the socket');
  assert.match(readlinkSync(`/proc/${pid}/fd/3`), /^socket:/);
  assert.ok(existsSync(path.join(keepersDir(host.paths), 'web.sock')), 'the keeper listens for the helper');
});

test('20 updates and 20 rollbacks under load fail no request', { timeout: 240_000 }, async () => {
  const updates: WindowFigures[] = [];
  const rollbacks: WindowFigures[] = [];
  for (let i = 1; i <= 20; i++) {
    updates.push(
      await measured(async () => {
        const r = await update('web', `1.1.${i}`, port);
        assert.equal(r.json?.outcome, 'active', r.stdout + r.stderr);
      }),
    );
    rollbacks.push(
      await measured(async () => {
        const r = await agentctl(host, ['rollback', 'web', '--json']);
        assert.equal(r.code, 0, r.stdout + r.stderr);
      }),
    );
    const rel = await agentctl(host, ['release-hold', 'web', '--json']);
    assert.equal(rel.code, 0, rel.stdout + rel.stderr);
  }
  const gaps = [...updates, ...rollbacks].map((x) => Math.round(x.longestGapMs));
  console.log(`with sockets: failed per update ${updates.map((x) => x.failed)}, per rollback ${rollbacks.map((x) => x.failed)}; longest gaps ${gaps} ms`);
  assert.equal(sum(updates), 0, `failed requests in updates: ${JSON.stringify(updates.filter((x) => x.failed))}`);
  assert.equal(sum(rollbacks), 0, `failed requests in rollbacks: ${JSON.stringify(rollbacks.filter((x) => x.failed))}`);
  assert.ok(updates.every((x) => x.answered > 0), 'requests were answered in every update window');
});

test('a version that is never ready is stopped, and the old process never was', { timeout: 60_000 }, async () => {
  const before = (await appStatusOf(host.root, 'web')).supervisor?.pid;
  let r: Awaited<ReturnType<typeof update>> | undefined;
  const w = await measured(async () => {
    r = await update('web', '2.0.0', port, { ...ready, ready: 'never', timeoutMs: 1500 });
  });
  assert.equal(r?.json?.outcome, 'rolled-back', r?.stdout);
  assert.equal(r?.json?.reason?.code, 'APP_NOT_READY');
  assert.match(r?.json?.reason?.message, /kept serving/);
  assert.equal((await appStatusOf(host.root, 'web')).supervisor?.pid, before, `the same process serves; helper:\n${helper.stderr().slice(-3000)}`);
  assert.equal(w.failed, 0, JSON.stringify(w));
});

test('a respawn after a crash fails no request: connections wait on the socket', { timeout: 60_000 }, async () => {
  const st = await appStatusOf(host.root, 'web');
  const pid = st.supervisor?.pid as number;
  const w = await measured(async () => {
    process.kill(pid, 'SIGUSR2');
    for (let i = 0; i < 100; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const now = await appStatusOf(host.root, 'web');
      if (now.supervisor?.pid && now.supervisor.pid !== pid && now.supervisor.state === 'running') return;
    }
    throw new Error('no respawn');
  });
  assert.equal(w.failed, 0, JSON.stringify(w));
  const now = await appStatusOf(host.root, 'web');
  assert.equal(now.supervisor?.lastExit?.code, 1, JSON.stringify(now.supervisor));
});

test('a restart of the helper, and an update by the new one, fail no request', { timeout: 60_000 }, async () => {
  const keeperPid = JSON.parse((await import('node:fs')).readFileSync(path.join(keepersDir(host.paths), 'web.pid'), 'utf8')).pid;
  const w = await measured(async () => {
    helper.child.kill('SIGKILL');
    await new Promise((r) => helper.child.once('exit', r));
    helper = await host.startHelper();
    const r = await update('web', '3.0.0', port);
    assert.equal(r.json?.outcome, 'active', r.stdout + r.stderr);
  });
  assert.equal(w.failed, 0, JSON.stringify(w));
  const again = JSON.parse((await import('node:fs')).readFileSync(path.join(keepersDir(host.paths), 'web.pid'), 'utf8')).pid;
  assert.equal(again, keeperPid, 'the new helper found the same keeper');
});

test('a keeper killed under a running app: the next update stops the old process first, a new keeper binds, and it ends active', { timeout: 60_000 }, async () => {
  const { readFileSync } = await import('node:fs');
  const pidFile = path.join(keepersDir(host.paths), 'web.pid');
  const keeper = JSON.parse(readFileSync(pidFile, 'utf8')).pid as number;
  process.kill(keeper, 'SIGKILL');
  const r = await update('web', '3.1.0', port);
  assert.equal(r.json?.outcome, 'active', r.stdout + r.stderr);
  const again = JSON.parse(readFileSync(pidFile, 'utf8')).pid as number;
  assert.notEqual(again, keeper, 'a new keeper holds the socket');
  assert.equal(await fetchOk(port), true);
});

test('without sockets, the same update refuses connections (what an app that does not opt in gets)', { timeout: 60_000 }, async () => {
  const plain: AppBehavior = { stableMs: 200, watchMs: 0 };
  const r1 = await update('plain', '1.0.0', plainPort, plain);
  assert.equal(r1.json?.outcome, 'active', r1.stdout + r1.stderr);
  const l = new RequestLoops(`http://127.0.0.1:${plainPort}/`, LOOPS, PACE_MS);
  l.start();
  try {
    await new Promise((r) => setTimeout(r, 300));
    const w = await measured(async () => {
      const r = await update('plain', '1.0.1', plainPort, plain);
      assert.equal(r.json?.outcome, 'active', r.stdout + r.stderr);
    }, l);
    console.log(`without sockets: ${w.failed} failed requests in one update (${JSON.stringify(w.why)}), longest gap ${Math.round(w.longestGapMs)} ms`);
    assert.ok(w.failed > 0, 'the old process stops before the new one listens: some connections are refused');
  } finally {
    await l.stop();
  }
});

test('a socket address that is taken, or not this host\'s, fails the install with the reason, and nothing is left', { timeout: 60_000 }, async () => {
  const squatter = net.createServer();
  await new Promise<void>((r) => squatter.listen(takenPort, '127.0.0.1', r));
  try {
    for (const [app, why] of [
      ['taken', /cannot bind socket http \(127\.0\.0\.1:\d+\): the address is taken by another process/],
      ['nowhere', /cannot bind socket http \(192\.0\.2\.1:8080\): it is not an address of this host/],
    ] as const) {
      const r = await update(app, '1.0.0', takenPort);
      assert.notEqual(r.code, 0, r.stdout + r.stderr);
      assert.equal(r.json?.outcome, 'failed', r.stdout);
      assert.match(r.json?.reason?.message, why);
      assert.equal(existsSync(currentLink(host.paths, app)), false, `${app}: no current is left`);
      assert.equal((await appStatusOf(host.root, app))?.supervisor?.pid ?? null, null, `${app}: nothing runs`);
      assert.equal(existsSync(path.join(keepersDir(host.paths), `${app}.sock`)), false, `${app}: no keeper stays`);
    }
  } finally {
    squatter.close();
  }
});

test('after everything, one process of the version current points at serves, and a stop closes the socket', { timeout: 60_000 }, async () => {
  const rec = await readRunRecord(host.paths, 'web');
  assert.equal(readlinkSync(currentLink(host.paths, 'web')), `versions/${rec?.version}`);
  await loops.stop();
  const stop = await agentctl(host, ['stop', 'web', '--json']);
  assert.equal(stop.code, 0, stop.stdout + stop.stderr);
  const refused = await new Promise<string>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
  assert.equal(refused, 'ECONNREFUSED', 'a stopped app refuses connections: its keeper closed the socket');
  assert.equal(existsSync(path.join(keepersDir(host.paths), 'web.sock')), false);
  const start = await agentctl(host, ['start', 'web', '--json']);
  assert.equal(start.code, 0, start.stdout + start.stderr);
  assert.equal(await fetchOk(port), true, 'a start binds the socket again');
});

async function fetchOk(p: number): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${p}/`);
      if (r.ok) return true;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}
