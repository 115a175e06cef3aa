import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostConfigSchema } from '../../../src/core/config-schema.js';
import { systemClock } from '../../../src/platform/clock.js';
import { AppLocks } from '../../../src/helper/app-locks.js';
import { ensureLayout } from '../../../src/helper/layout.js';
import { Supervisor } from '../../../src/helper/supervisor/supervisor.js';
import type { UpdateContext } from '../../../src/helper/update/context.js';
import { makeHost, processApp } from '../../helpers/host.js';

// A supervisor over three apps whose lock records every reconcile, one at a time or not.
async function observedSupervisor() {
  const config = { apps: { a: processApp(), b: processApp(), c: processApp() } };
  const host = makeHost(config);
  await ensureLayout(host.paths);
  const locks = new AppLocks();
  let inside = 0;
  let overlapped = false;
  const reconciles: string[] = [];
  const tryAcquire = locks.tryAcquire.bind(locks);
  locks.tryAcquire = (app, work) => {
    reconciles.push(app);
    inside++;
    if (inside > 1) overlapped = true;
    const held = tryAcquire(app, work);
    return { work: held.work, release: () => (inside--, held.release()) };
  };
  const ctx = { paths: host.paths, config: hostConfigSchema.parse(config), clock: systemClock, locks, blockedInMemory: new Map() } as unknown as UpdateContext;
  return { host, sup: new Supervisor(ctx, { sweepMs: 60_000, pollMs: 60_000 }), reconciles, overlapped: () => overlapped };
}

test('a burst of exits coalesces into one queued pass', async () => {
  const o = await observedSupervisor();
  try {
    const passes = Array.from({ length: 200 }, (_, i) => o.sup.requestPass(`exit ${i}`));
    assert.equal(new Set(passes).size, 1, 'every request of the burst shares one pass');
    await Promise.all(passes);
    assert.deepEqual(o.reconciles, ['a', 'b', 'c'], 'one pass over every app');
  } finally {
    o.sup.close();
    o.host.cleanup();
  }
});

test('passes are serialized: one requested during a pass runs after it, never beside it', async () => {
  const o = await observedSupervisor();
  try {
    const first = o.sup.requestPass('start');
    await new Promise((r) => setImmediate(r)); // the first pass is under way
    const second = o.sup.requestPass('exit during the pass');
    const third = o.sup.requestPass('another exit');
    assert.notEqual(first, second, 'a pass already running does not absorb a new request');
    assert.equal(second, third, 'requests while one is queued share it');
    await Promise.all([first, second, third]);
    assert.deepEqual(o.reconciles, ['a', 'b', 'c', 'a', 'b', 'c']);
    assert.equal(o.overlapped(), false, 'no two reconciles ran at once');
  } finally {
    o.sup.close();
    o.host.cleanup();
  }
});
