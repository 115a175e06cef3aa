import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import net from 'node:net';
import { appRelease, freePort, type AppBehavior } from '../../fixtures/app-releases.js';
import { sri } from '../../helpers/host.js';
import { bootOrSkip, CONTAINER_REPO, waitFor, type SystemdContainer } from '../../helpers/systemd-container.js';
import { appStatusIn, helperStatusIn, pathIn, reportScenarios, runIn, shIn, writeIn } from '../../helpers/container-exec.js';
import { environOf } from '../../helpers/host-fixture.js';
import { RequestLoops, type WindowFigures } from '../../../bench/lib/request-loops.js';

// The zero-downtime handover (docs/design.md §17) under the systemd runner of a real systemd 252
// (booted in a container, one boot for every scenario): the app's socket is a socket unit of
// systemd's, its processes the two sides of a unit template. Under a steady load of 8 request
// loops from outside the container (it shares the host's network), 20 updates and 20 rollbacks,
// a respawn after a crash, and a helper SIGKILLed in the middle of a handover then started again
// lose no request at all; a stop closes the socket (connections are refused) and leaves no unit.

const ROOT = '/tmp/steward-e2e/root';
const SCRATCH = '/tmp/steward-e2e/scratch';
const HELPER_UNIT = 'steward-helper.service';
const USER = 'stwweb';
const LOOPS = 8;
// The units' names carry a hash of the root prefix (socket-unit-files.ts): this host's.
const BASE = `steward-app-web.${createHash('sha256').update(ROOT).digest('hex').slice(0, 16)}`;
const SIDE_A = `${BASE}@a.service`;
const SIDE_B = `${BASE}@b.service`;
const SOCKET = `${BASE}@http.socket`;
const HOLDER = `${BASE}.hold.service`;
// A health budget for a loaded machine (the CI box runs several suites on 2 cores): the handover's
// start, readiness and probe share it.
const ready: AppBehavior = { ready: 'after', readyAfterMs: 50, stableMs: 200, watchMs: 0, crashOnUsr2: true, timeoutMs: 20_000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function sh(box: SystemdContainer, script: string, ...args: string[]): Promise<string> {
  return (await shIn(box, script, ...args)).stdout;
}

const agentctl = (box: SystemdContainer, args: string[]) => runIn(box, '/usr/bin/node', [`${CONTAINER_REPO}/bin/agentctl.js`, '--root', ROOT, ...args]);

// The app's status as `agentctl status web --json` gives it, asked over the helper's socket from
// this process (container-exec.ts: polled, a node started inside per look costs ~0.25 s of CPU).
async function webStatus(box: SystemdContainer): Promise<any> {
  const st = await appStatusIn(box, 'web', ROOT);
  assert.ok(st, 'the helper answers status, recovered');
  return st;
}

async function show(box: SystemdContainer, unit: string, props = 'MainPID,ActiveState,LoadState'): Promise<Record<string, string>> {
  const r = await box.exec('systemctl', ['show', '-p', props, '--', unit]);
  return Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

async function update(box: SystemdContainer, app: string, version: string, port: number, behavior: AppBehavior = ready) {
  const tgz = appRelease(app, version, port, behavior);
  const file = `${SCRATCH}/${app}-${version}.tgz`;
  await writeIn(box, file, tgz);
  return agentctl(box, ['update', app, version, '--file', file, '--integrity', sri(tgz), '--allow-unsigned', '--json']);
}

// The main processes of the two sides that run.
async function sideMains(box: SystemdContainer): Promise<number[]> {
  const out: number[] = [];
  for (const unit of [SIDE_A, SIDE_B]) {
    const s = await show(box, unit);
    if (s.ActiveState === 'active' && Number(s.MainPID) > 0) out.push(Number(s.MainPID));
  }
  return out;
}

// The helper as a unit (Restart=always brings it back after a SIGKILL), with `env`.
async function startHelperUnit(box: SystemdContainer, unit: string, env: string[] = [], restart = true): Promise<void> {
  const run = await box.exec('systemd-run', [
    `--unit=${unit}`,
    ...(restart ? ['--property=Restart=always', '--property=RestartSec=1'] : []),
    ...env.map((e) => `--setenv=${e}`),
    '/usr/bin/node', `${CONTAINER_REPO}/bin/steward-helper.js`, '--root', ROOT,
  ]);
  assert.equal(run.code, 0, `systemd-run ${unit}: ${run.stderr}`);
}

async function helperReady(box: SystemdContainer): Promise<boolean> {
  return (await helperStatusIn(box, ROOT))?.recovering === false;
}

function connect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
}

test('under systemd, an app with sockets is handed over between two sides of a unit template on a socket unit, losing no request', { timeout: 600_000 }, async (t) => {
  const box = await bootOrSkip(t);
  if (!box) return;
  const ran: string[] = [];
  const planned = 7;
  let loops: RequestLoops | null = null;
  t.after(async () => {
    await loops?.stop();
    await reportScenarios(box, ran, planned, { units: [HELPER_UNIT, 'steward-helper-faulty.service', SIDE_A, SIDE_B, SOCKET], lines: 80 });
    await box.stop();
  });
  const port = await freePort();
  const takenPort = await freePort();
  const config = {
    apps: {
      web: {
        runner: 'process',
        user: USER,
        group: USER,
        restart: { baseMs: 100, capMs: 1000, maxAttempts: 10, healthyMs: 60_000 },
        stopTimeoutMs: 5000,
        sockets: [{ name: 'http', listen: `127.0.0.1:${port}` }],
      },
      taken: { runner: 'process', user: USER, group: USER, sockets: [{ name: 'http', listen: `127.0.0.1:${takenPort}` }] },
    },
    supervisor: { sweepMs: 500, pollMs: 200 },
  };
  const add = await box.exec('useradd', ['--system', '--user-group', '--home-dir', '/nonexistent', '--no-create-home', '--shell', '/usr/sbin/nologin', USER]);
  assert.equal(add.code, 0, `useradd: ${add.stderr}`);
  await sh(box, 'mkdir -p -m 0755 /tmp/steward-e2e "$1" "$2" "$1/etc/steward" && chmod 0755 /tmp/steward-e2e "$1" "$2"', ROOT, SCRATCH);
  await writeIn(box, `${ROOT}/etc/steward/steward.json`, JSON.stringify(config, null, 2));
  await startHelperUnit(box, 'steward-helper');
  await waitFor('the helper to answer status', () => helperReady(box), 30_000, 100);
  const first = await update(box, 'web', '1.0.0', port);
  assert.equal(first.json?.outcome, 'active', first.text);
  loops = new RequestLoops(`http://127.0.0.1:${port}/`, LOOPS, 10);
  loops.start();
  await sleep(500);
  const l = loops;
  // What one step cost the clients: from its start to 300 ms after it returned.
  const measured = async (op: () => Promise<void>): Promise<WindowFigures> => {
    const from = performance.now();
    await op();
    await sleep(300);
    return l.figures(from, performance.now());
  };

  await t.test('the app runs as a side of the template on the socket unit, and sees LISTEN_FDS, its own LISTEN_PID and LISTEN_FDNAMES', async () => {
    const st = await webStatus(box);
    const pid = st.supervisor.pid as number;
    assert.deepEqual(await sideMains(box), [pid], 'one side runs: the app');
    assert.equal((await show(box, SOCKET)).ActiveState, 'active');
    assert.equal((await show(box, HOLDER)).ActiveState, 'active', 'the holder runs with the socket');
    const env = environOf(pathIn(box, `/proc/${pid}/environ`));
    assert.equal(env.get('LISTEN_FDS'), '1');
    assert.equal(env.get('LISTEN_PID'), String(pid), 'LISTEN_PID is the app process itself (after the sh exec)');
    assert.equal(env.get('LISTEN_FDNAMES'), 'http');
    assert.equal(env.get('STEWARD_READY_FD'), '4', 'the readiness fd comes after the socket');
    assert.match(await sh(box, 'readlink "/proc/$1/fd/3"', String(pid)), /^socket:/);
    const files = (await sh(box, 'ls /run/systemd/system')).split('\n').filter((f) => f.startsWith(BASE));
    assert.deepEqual(files.sort(), [`${BASE}.hold.service`, `${BASE}@.service`, `${BASE}@a.service.d`, `${BASE}@http.socket`].sort());
    ran.push('units and LISTEN_*');
  });

  await t.test('20 updates and 20 rollbacks under load fail no request', { timeout: 400_000 }, async () => {
    const updates: WindowFigures[] = [];
    const rollbacks: WindowFigures[] = [];
    for (let i = 1; i <= 20; i++) {
      updates.push(
        await measured(async () => {
          const r = await update(box, 'web', `1.1.${i}`, port);
          assert.equal(r.json?.outcome, 'active', r.text);
        }),
      );
      rollbacks.push(
        await measured(async () => {
          const r = await agentctl(box, ['rollback', 'web', '--json']);
          assert.equal(r.code, 0, r.text);
        }),
      );
      const rel = await agentctl(box, ['release-hold', 'web', '--json']);
      assert.equal(rel.code, 0, rel.text);
    }
    const gaps = [...updates, ...rollbacks].map((x) => Math.round(x.longestGapMs));
    console.log(`systemd, with sockets: failed per update ${updates.map((x) => x.failed)}, per rollback ${rollbacks.map((x) => x.failed)}; longest gaps ${gaps} ms`);
    assert.equal(updates.reduce((n, x) => n + x.failed, 0), 0, `failed requests in updates: ${JSON.stringify(updates.filter((x) => x.failed))}`);
    assert.equal(rollbacks.reduce((n, x) => n + x.failed, 0), 0, `failed requests in rollbacks: ${JSON.stringify(rollbacks.filter((x) => x.failed))}`);
    assert.ok(updates.every((x) => x.answered > 0), 'requests were answered in every update window');
    const st = await webStatus(box);
    assert.deepEqual(await sideMains(box), [st.supervisor.pid], 'one side runs after all of them');
    ran.push('20 updates + 20 rollbacks');
  });

  await t.test('a respawn after a crash fails no request: connections wait on the socket', { timeout: 60_000 }, async () => {
    const pid = (await webStatus(box)).supervisor.pid as number;
    const w = await measured(async () => {
      await sh(box, 'kill -USR2 "$1"', String(pid));
      await waitFor('the respawn', async () => {
        const now = await webStatus(box);
        return now.supervisor?.pid && now.supervisor.pid !== pid && now.supervisor.state === 'running';
      }, 20_000, 100);
    });
    assert.equal(w.failed, 0, JSON.stringify(w));
    const now = await webStatus(box);
    assert.equal(now.supervisor?.lastExit?.code, 1, `how it ended, told by systemd: ${JSON.stringify(now.supervisor)}`);
    assert.deepEqual(await sideMains(box), [now.supervisor.pid]);
    ran.push('respawn after a crash');
  });

  await t.test('a helper SIGKILLed in the middle of a handover, then started again, fails no request and leaves one side of the version current names', { timeout: 120_000 }, async () => {
    const before = await webStatus(box);
    const w = await measured(async () => {
      assert.equal((await box.exec('systemctl', ['stop', HELPER_UNIT])).code, 0);
      // A helper that dies once both sides run, the new one ready (after-handover-ready).
      await startHelperUnit(box, 'steward-helper-faulty', ['STEWARD_FAULTS=after-handover-ready'], false);
      await waitFor('the faulty helper to answer', () => helperReady(box), 30_000, 100);
      const r = await update(box, 'web', '3.0.0', port);
      assert.notEqual(r.json?.outcome, 'active', `the helper died in the handover: ${r.text}`);
      await waitFor('the faulty helper gone', async () => (await show(box, 'steward-helper-faulty.service')).ActiveState !== 'active', 15_000, 100);
      const log = (await box.exec('journalctl', ['-u', 'steward-helper-faulty.service', '-o', 'cat', '--no-pager'])).stdout;
      assert.match(log, /^steward-fault-reached after-handover-ready 1$/m);
      assert.equal((await sideMains(box)).length, 2, 'both sides run at after-handover-ready');
      await sleep(500);
      await startHelperUnit(box, 'steward-helper');
      await waitFor('the restarted helper to recover', () => helperReady(box), 30_000, 100);
    });
    assert.equal(w.failed, 0, JSON.stringify(w));
    const st = await webStatus(box);
    assert.equal(st.current, before.current, 'recovery went back to the version current named');
    assert.equal(st.lastAttempt?.outcome, 'rolled-back', JSON.stringify(st.lastAttempt));
    assert.deepEqual(await sideMains(box), [st.supervisor.pid], 'one side runs: the version current names');
    const next = await measured(async () => {
      const r = await update(box, 'web', '3.0.1', port);
      assert.equal(r.json?.outcome, 'active', r.text);
    });
    assert.equal(next.failed, 0, `an update by the new helper: ${JSON.stringify(next)}`);
    ran.push('helper SIGKILL mid-handover + restart');
  });

  await t.test('a socket address that is taken fails the install with the reason, and leaves no unit behind', { timeout: 60_000 }, async () => {
    const squatter = net.createServer();
    await new Promise<void>((r) => squatter.listen(takenPort, '127.0.0.1', r));
    try {
      const r = await update(box, 'taken', '1.0.0', takenPort);
      assert.equal(r.json?.outcome, 'failed', r.text);
      assert.match(r.json?.reason?.message, /cannot bind socket http: \(127\.0\.0\.1:\d+\) the address is taken by another process/);
    } finally {
      squatter.close();
    }
    const base = `steward-app-taken.${createHash('sha256').update(ROOT).digest('hex').slice(0, 16)}`;
    const left = (await sh(box, 'ls /run/systemd/system')).split('\n').filter((f) => f.startsWith(base));
    assert.deepEqual(left, [], 'no unit file is left');
    ran.push('taken address');
  });

  await t.test('agentctl stop closes the socket: connections are refused, and no unit is left', { timeout: 60_000 }, async () => {
    await loops?.stop();
    loops = null;
    const stop = await agentctl(box, ['stop', 'web', '--json']);
    assert.equal(stop.code, 0, stop.text);
    assert.equal(await connect(port), 'ECONNREFUSED', 'a stopped app refuses connections');
    const files = (await sh(box, 'ls /run/systemd/system')).split('\n').filter((f) => f.startsWith(BASE));
    assert.deepEqual(files, [], 'its unit files are removed');
    const units = (await box.exec('systemctl', ['list-units', '--all', '--plain', '--no-legend', `${BASE}*`])).stdout.trim();
    assert.equal(units, '', 'no unit of it is loaded');
    const start = await agentctl(box, ['start', 'web', '--json']);
    assert.equal(start.code, 0, start.text);
    assert.equal(await connect(port), 'connected', 'a start opens the socket again');
    ran.push('stop closes the socket');
  });

  await t.test('a hostile command line, environment and socket path reach the app as written through the unit files', { timeout: 60_000 }, async () => {
    // Specifiers, variables, quotes, escapes, a lone ';' (ExecStart's separator), a leading '-'
    // (a prefix where it is the program), control characters and non-ASCII.
    const argv = ['$HOME', '${USER}', '$$X', '%n', '%%', 'a b', ';', '\\;', '"q"', "'s'", 'new\nline', 'tab\there', '\\', '-x', '\x01ctl', 'ünï', ''];
    const env = { ODD: 'a $HOME %n "q" \\ x', TAB: 'a\tb', CTL: 'x\x01y', LISTEN_PID: '1' };
    const listen = '/run/odd %n $HOME "q" x/s.sock';
    const r = await box.exec('/usr/bin/node', [`${CONTAINER_REPO}/test/fixtures/systemd/socket-sides-odd.mjs`, JSON.stringify({ argv, env, listen, prefix: '/tmp/odd host %i' })], { timeoutMs: 60_000 });
    const last = r.stdout.trim().split('\n').pop() ?? '';
    assert.ok(last.startsWith('{'), `socket-sides-odd.mjs printed no result (exit ${r.code}): ${r.stdout}${r.stderr}`);
    const out = JSON.parse(last);
    assert.equal(out.error, undefined, r.stdout + r.stderr);
    assert.deepEqual(out.seen.argv, argv, 'arguments arrive as written');
    assert.equal(out.seen.env.ODD, env.ODD);
    assert.equal(out.seen.env.TAB, env.TAB);
    assert.equal(out.seen.env.CTL, env.CTL);
    assert.equal(out.seen.env.LISTEN_PID, String(out.seen.pid), "systemd's LISTEN_PID, never the release's");
    assert.equal(out.seen.env.LISTEN_FDNAMES, 'odd.sock-1');
    assert.match(out.seen.fd3, /^socket:/);
    assert.equal(out.socketAt, true, 'the Unix socket is at the path as written');
    assert.deepEqual(out.exit, { code: null, signal: 'SIGTERM' }, 'how the stopped side ended, as its ExecStopPost= wrote it');
    assert.deepEqual(out.left, [], 'closeSockets leaves no unit file');
    ran.push('hostile values round trip');
  });
});
