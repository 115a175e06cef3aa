import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { StewardError } from '../../../src/core/errors.js';
import type { Clock } from '../../../src/platform/clock.js';
import { systemClock } from '../../../src/platform/clock.js';
import { probeRelease } from '../../../src/helper/update/probe.js';
import { readAppState } from '../../../src/helper/state/app-state.js';
import { readStatus } from '../../../src/helper/ops/status.js';
import { listReleases } from '../../../src/helper/ops/releases.js';
import { hostConfigSchema } from '../../../src/core/config-schema.js';
import { CONFIG, instantClock, makeFaultHost, type FaultHost } from '../../helpers/fault-host.js';

// Issue 7 item 4: a clock jumping back and forward (a quarantine, a probe) and a hung probe.
// (A backoff wait under a jumping clock is in test/helper/supervisor/storm.test.ts.)

const DAY = 86_400_000;

// A host where 1.0.0 is active and 3.0.0 failed once, so it is quarantined for 5 min.
async function quarantinedHost(t: TestContext) {
  const fh = await makeFaultHost();
  t.after(() => fh.cleanup());
  const clock = instantClock();
  const ctx = fh.context(undefined, clock);
  for (const v of ['1.0.0', '3.0.0']) await fh.stage(ctx, v);
  assert.equal((await fh.update(ctx, '1.0.0', 'one')).outcome, 'active');
  fh.unhealthy.add('3.0.0');
  assert.equal((await fh.update(ctx, '3.0.0', 'fail-1')).outcome, 'rolled-back');
  return { fh, clock, ctx };
}

// What `status` and `releases` answer about 3.0.0's quarantine at `now`.
async function quarantineSeen(fh: FaultHost, now: number): Promise<{ status: string[]; releases: boolean | undefined }> {
  const config = hostConfigSchema.parse(CONFIG);
  const st = await readStatus({ paths: fh.paths, config, startedAt: now, recovering: false, running: () => undefined, blockedInMemory: new Map(), now }, 'web');
  const rel = await listReleases(fh.paths, config, 'web', now);
  return { status: st.apps[0]?.quarantined ?? ['missing'], releases: rel.releases.find((r) => r.version === '3.0.0')?.quarantine?.inForce };
}

test('a clock set back two days after a failure does not stretch the quarantine: the stamp past the cap is not trusted, and a new failure quarantines by the new clock', async (t) => {
  const { fh, clock, ctx } = await quarantinedHost(t);
  const q = (await readAppState(fh.paths, 'web')).quarantine['3.0.0'];
  assert.equal(q?.retryAfter, clock.now() + 300_000, 'quarantined for 5 min');

  assert.deepEqual(await quarantineSeen(fh, clock.now()), { status: ['3.0.0'], releases: true }, 'status and releases show the quarantine');

  clock.jump(-2 * DAY);
  // The stamp is now two days and five minutes ahead, past the 24 h cap: it is not trusted, and
  // status and releases say what the stage refusal does.
  assert.deepEqual(await quarantineSeen(fh, clock.now()), { status: [], releases: false }, 'an untrusted stamp holds nothing back');
  assert.equal((await fh.update(ctx, '3.0.0', 'fail-2')).outcome, 'rolled-back', 'the retry ran');
  const again = (await readAppState(fh.paths, 'web')).quarantine['3.0.0'];
  assert.equal(again?.failures, 2);
  assert.ok((again?.retryAfter as number) <= clock.now() + DAY, 'quarantined again by the clock as it is now');
  await assert.rejects(fh.update(ctx, '3.0.0', 'too-soon'), (err: unknown) => err instanceof StewardError && err.code === 'QUARANTINED');
});

test('a clock that jumps forward ends a quarantine early (it fails open) and blames nothing more', async (t) => {
  const { fh, clock, ctx } = await quarantinedHost(t);
  clock.jump(DAY);
  fh.unhealthy.delete('3.0.0');
  assert.equal((await fh.update(ctx, '3.0.0', 'ok-now')).outcome, 'active');
  assert.equal((await readAppState(fh.paths, 'web')).quarantine['3.0.0'], undefined, 'active clears the quarantine');
});

// A clock whose wall time jumps a day back and forth at every look; the monotonic time is steady.
function jumpyClock(): Clock & { nowCalls: number } {
  let flip = 1;
  const c = {
    nowCalls: 0,
    now: () => {
      c.nowCalls++;
      flip = -flip;
      return Date.now() + flip * DAY;
    },
    monotonic: () => performance.now(),
    sleep: systemClock.sleep,
  };
  return c;
}

test('a probe measures its stable period on the monotonic clock: wall clock jumps neither cut it short nor stretch it', async () => {
  const clock = jumpyClock();
  let checks = 0;
  const r = await probeRelease({ timeoutMs: 0, stableMs: 300 }, { clock, intervalMs: 20, isAlive: async () => (checks++, true) });
  assert.deepEqual(r, { ok: true });
  // 300 ms in 20 ms steps: a wall-clock deadline would have ended at once (a day ahead) or never.
  assert.ok(checks >= 5, `the process was watched for the whole stable period: ${checks} checks`);
});

test('a hung health endpoint (accepts, never answers) fails the probe at its timeout instead of hanging the update', async (t) => {
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer(() => {
    /* never answers */
  });
  server.on('connection', (s) => sockets.add(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const r = await probeRelease({ http: `http://127.0.0.1:${port}/healthz`, timeoutMs: 600, stableMs: 0 }, { clock: jumpyClock(), isAlive: async () => true, intervalMs: 100 });
  assert.equal(r.ok, false);
  assert.match((r as { reason: string }).reason, /timed out|no answer|did not answer/i, (r as { reason: string }).reason);
  assert.ok(sockets.size >= 1, 'the probe did connect');
});
