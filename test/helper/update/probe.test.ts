import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { systemClock, type Clock } from '../../../src/platform/clock.js';
import { checkHttp, checkTcp, resolveLoopback } from '../../../src/helper/update/probe-checks.js';
import { probeRelease, type ProbeSpec } from '../../../src/helper/update/probe.js';
import { REPO } from '../../helpers/host.js';

const APPS = path.join(REPO, 'test/fixtures/apps');
const children: ChildProcess[] = [];
after(() => children.forEach((c) => c.kill('SIGKILL')));

interface Served {
  child: ChildProcess;
  port: number;
  isAlive: () => Promise<boolean>;
}

// Starts a fixture server on a free loopback port and waits for its "listening <port>" line.
async function serve(fixture: string, env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [path.join(APPS, fixture)], { env: { PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', () => reject(new Error(`${fixture} exited`)));
  });
  return { child, port, isAlive: async () => child.exitCode === null && child.signalCode === null };
}

// A loopback port nothing listens on.
async function closedPort(): Promise<number> {
  const s = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

const alive = async () => true;
const fast = { clock: systemClock, intervalMs: 50 };
const spec = (extra: Partial<ProbeSpec>): ProbeSpec => ({ timeoutMs: 1500, stableMs: 300, ...extra });

test('an http probe passes when the app answers 200 and stays up', async () => {
  const s = await serve('http-server.mjs');
  const r = await probeRelease(spec({ http: `http://127.0.0.1:${s.port}/healthz` }), { ...fast, isAlive: s.isAlive });
  assert.deepEqual(r, { ok: true });
});

test('an http probe that answers 500 until the timeout fails and says what it saw', async () => {
  const s = await serve('http-server.mjs', { FAIL: '1' });
  const t0 = performance.now();
  const r = await probeRelease(spec({ http: `http://127.0.0.1:${s.port}/healthz` }), { ...fast, isAlive: s.isAlive });
  assert.equal(r.ok, false);
  assert.match((r as { reason: string }).reason, new RegExp(`^GET http://127\\.0\\.0\\.1:${s.port}/healthz answered 500 for 1\\.\\d s$`));
  assert.ok(performance.now() - t0 >= 1400);
});

test('an http redirect fails the probe: redirects are never followed', async () => {
  const s = await serve('http-server.mjs', { REDIRECT: '1' });
  const r = await probeRelease(spec({ http: `http://127.0.0.1:${s.port}/healthz`, timeoutMs: 300 }), { ...fast, isAlive: s.isAlive });
  assert.equal(r.ok, false);
  assert.match((r as { reason: string }).reason, /answered 302 \(redirects are not followed\)/);
});

test('an http probe to an app that never answers times out', async () => {
  const s = await serve('hang.mjs');
  const r = await probeRelease(spec({ http: `http://127.0.0.1:${s.port}/healthz`, timeoutMs: 400 }), { ...fast, isAlive: s.isAlive });
  assert.equal(r.ok, false);
  assert.match((r as { reason: string }).reason, /timed out after \d+ ms for/);
});

test('an endless response body is cut off after 64 KiB instead of hanging the check', async () => {
  const s = await serve('http-server.mjs', { ENDLESS: '1' });
  const t0 = performance.now();
  assert.deepEqual(await checkHttp(`http://127.0.0.1:${s.port}/healthz`, 1500), { ok: true });
  assert.ok(performance.now() - t0 < 1000);
});

test('a tcp probe passes when the port accepts a connection', async () => {
  const s = await serve('tcp-server.mjs');
  const r = await probeRelease(spec({ tcp: `127.0.0.1:${s.port}` }), { ...fast, isAlive: s.isAlive });
  assert.deepEqual(r, { ok: true });
});

test('a tcp probe fails when the connection is refused', async () => {
  const port = await closedPort();
  const r = await probeRelease(spec({ tcp: `127.0.0.1:${port}`, timeoutMs: 300 }), { ...fast, isAlive: alive });
  assert.equal(r.ok, false);
  assert.match((r as { reason: string }).reason, new RegExp(`^connect 127\\.0\\.0\\.1:${port} refused for \\d+ ms$`));
});

test('a process that dies during the stable period fails the probe at once', async () => {
  const s = await serve('http-server.mjs');
  let calls = 0;
  const isAlive = async () => {
    // The first call is before the first probe; the third is inside the stable period.
    if (++calls === 3) {
      s.child.kill('SIGKILL');
      await new Promise((r) => s.child.once('exit', r));
    }
    return s.isAlive();
  };
  const t0 = performance.now();
  const r = await probeRelease(spec({ http: `http://127.0.0.1:${s.port}/healthz`, stableMs: 5000 }), { ...fast, isAlive });
  assert.deepEqual(r, { ok: false, reason: 'the process exited during the stable period' });
  assert.ok(performance.now() - t0 < 2000);
});

test('a process that is dead before the first success fails at once', async () => {
  const port = await closedPort();
  const t0 = performance.now();
  const r = await probeRelease(spec({ tcp: `127.0.0.1:${port}`, timeoutMs: 5000 }), { ...fast, isAlive: async () => false });
  assert.deepEqual(r, { ok: false, reason: 'the process exited' });
  assert.ok(performance.now() - t0 < 1000);
});

test('without health, a process that stays alive for stableMs passes', async () => {
  const t0 = performance.now();
  const r = await probeRelease({ timeoutMs: 0, stableMs: 300 }, { ...fast, isAlive: alive });
  assert.deepEqual(r, { ok: true });
  assert.ok(performance.now() - t0 >= 290);
});

test('without health, a process that exits during stableMs fails', async () => {
  let calls = 0;
  const r = await probeRelease({ timeoutMs: 0, stableMs: 5000 }, { ...fast, isAlive: async () => ++calls < 3 });
  assert.deepEqual(r, { ok: false, reason: 'the process exited' });
});

test('the last probe after the stable period must pass too', async () => {
  const s = await serve('http-server.mjs', { FAIL_AFTER: '1' });
  const r = await probeRelease(spec({ http: `http://127.0.0.1:${s.port}/healthz` }), { ...fast, isAlive: s.isAlive });
  assert.equal(r.ok, false);
  assert.match((r as { reason: string }).reason, /answered 500 after the stable period$/);
});

test('a non-loopback target is refused without connecting', async () => {
  // 0.0.0.0 reaches the local host on Linux, so a connection would show up at this server.
  let connections = 0;
  const server = net.createServer((c) => {
    connections++;
    c.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => server.close());
  const port = (server.address() as net.AddressInfo).port;
  for (const target of [{ http: `http://0.0.0.0:${port}/healthz` }, { tcp: `0.0.0.0:${port}` }, { http: `http://user:pw@127.0.0.1:${port}/` }]) {
    const r = await probeRelease(spec(target), { ...fast, isAlive: alive });
    assert.equal(r.ok, false);
    assert.match((r as { reason: string }).reason, /not a loopback .*; not probed$/);
  }
  // The single checks refuse on their own too.
  assert.equal((await checkHttp(`http://0.0.0.0:${port}/healthz`, 500)).ok, false);
  assert.equal((await checkTcp(`0.0.0.0:${port}`, 500)).ok, false);
  assert.equal(await resolveLoopback('0.0.0.0'), null);
  assert.equal(connections, 0);
  assert.match((await resolveLoopback('localhost')) ?? '', /^(127\.|::1$)/);
});

test('aborting the signal rejects the probe with its reason', async () => {
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error('update cancelled')), 100);
  await assert.rejects(probeRelease({ timeoutMs: 0, stableMs: 5000 }, { ...fast, isAlive: alive, signal: ac.signal }), /update cancelled/);
});

// A clock whose sleep returns at once and moves time forward by the slept amount.
function fakeClock(): Clock & { slept: number } {
  let t = 1_000_000;
  const c = {
    slept: 0,
    now: () => t,
    monotonic: () => t,
    sleep: async (ms: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      t += ms;
      c.slept += ms;
    },
  };
  return c;
}

test('on a fake clock, the waits and the reported times come from the clock', async () => {
  const clock = fakeClock();
  let checks = 0;
  const r = await probeRelease({ timeoutMs: 0, stableMs: 5000 }, { clock, isAlive: async () => (checks++, true) });
  assert.deepEqual(r, { ok: true });
  assert.equal(clock.slept, 5000);
  assert.ok(checks >= 11, 'isAlive at least every 500 ms interval and once at the end');

  const clock2 = fakeClock();
  const port = await closedPort();
  const t0 = performance.now();
  const r2 = await probeRelease({ tcp: `127.0.0.1:${port}`, timeoutMs: 30_000, stableMs: 5000 }, { clock: clock2, isAlive: alive });
  assert.deepEqual(r2, { ok: false, reason: `connect 127.0.0.1:${port} refused for 30 s` });
  assert.equal(clock2.slept, 30_000);
  assert.ok(performance.now() - t0 < 10_000, 'thirty simulated seconds take far less real time');
});

test('with confirm, the probe passes once the process confirms, then stays up for stableMs', async () => {
  let asked = 0;
  const confirmed = async () => ++asked >= 3;
  const r = await probeRelease(spec({ confirm: 'heartbeat' }), { ...fast, isAlive: alive, confirmed });
  assert.deepEqual(r, { ok: true });
  assert.ok(asked >= 3);
});

test('with confirm, a process that never confirms fails after timeoutMs with AGENT_UNCONFIRMED, and one that exits before it confirms as an exit', async () => {
  const r = await probeRelease(spec({ confirm: 'heartbeat', timeoutMs: 300 }), { ...fast, isAlive: alive, confirmed: async (t) => (await new Promise((res) => setTimeout(res, t)), false) });
  assert.equal(r.ok, false);
  assert.equal(!r.ok && r.code, 'AGENT_UNCONFIRMED');
  assert.match(!r.ok ? r.reason : '', /^the new agent confirmed no heartbeat answered by the control plane for /);
  // One that exits before it confirms fails as an exit, not as unconfirmed.
  let calls = 0;
  const exited = await probeRelease(spec({ confirm: 'heartbeat' }), { ...fast, isAlive: async () => ++calls < 2, confirmed: async () => false });
  assert.deepEqual(exited, { ok: false, reason: 'the process exited' });
});

