import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppLocks } from '../../src/helper/app-locks.js';

const work = (op: string) => ({ attemptId: op, op, phase: 'x', startedAt: 0 });

test('a request waits out a supervisor pass instead of failing with BUSY', async () => {
  const locks = new AppLocks();
  const pass = locks.tryAcquire('web', work('supervise'));
  let got = false;
  const waiting = locks.acquire('web', work('update')).then((h) => {
    got = true;
    return h;
  });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(got, false, 'the request waits while the pass runs');
  pass.release();
  const held = await waiting;
  assert.equal(locks.get('web')?.op, 'update');
  held.release();
});

test('a request meeting another request gets BUSY naming it, and the supervisor never waits', async () => {
  const locks = new AppLocks();
  const update = await locks.acquire('web', work('update'));
  await assert.rejects(locks.acquire('web', work('rollback')), { code: 'BUSY', message: /update update in phase x/ });
  assert.throws(() => locks.tryAcquire('web', work('supervise')), { code: 'BUSY' });
  update.release();
  assert.equal(locks.get('web'), undefined);
  const other = await locks.acquire('api', work('stage'));
  other.release();
});

test('every release is heard, so the supervisor can take the app back', async () => {
  const locks = new AppLocks();
  const heard: string[] = [];
  locks.onRelease = (app, w) => heard.push(`${app}:${w.op}`);
  const h = await locks.acquire('web', work('update'));
  h.release();
  h.release();
  assert.deepEqual(heard, ['web:update'], 'released once, heard once');
});
