// The waits one instance holds (src/control/wakeups/wait-registry.ts), on a fake clock: a wait
// ends by a wake of its node or by its time; a wake that finds no wait is kept UNHEARD_MS for the
// node's next one and then forgotten; the bounds per node and per instance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UNHEARD_MS, WaitRegistry, type Hold } from '../../src/control/wakeups/wait-registry.js';
import { FakeClock } from '../helpers/control-harness.js';

const held = (h: Hold) => {
  assert.ok(h.ok, 'held');
  return h.wait;
};

test('a wait ends woken when its node is woken, and only then; another wait runs out at its time', async () => {
  const clock = new FakeClock();
  const r = new WaitRegistry({ clock });
  const a = held(r.hold('n-0a', 60_000));
  const b = held(r.hold('n-0b', 30_000));
  assert.equal(r.size, 2);
  r.wake(['n-0a']);
  assert.equal(await a.ended, 'woken');
  clock.advance(30_000);
  assert.equal(await b.ended, 'timeout');
  assert.equal(r.size, 0);
});

test('a wake with no wait held is heard by the next wait within UNHEARD_MS, once; later it is forgotten', async () => {
  const clock = new FakeClock();
  const r = new WaitRegistry({ clock });
  r.wake(['n-0a', 'n-0b']);
  assert.equal(await held(r.hold('n-0a', 60_000)).ended, 'woken');
  const again = held(r.hold('n-0a', 60_000));
  clock.advance(UNHEARD_MS + 1);
  assert.equal(await Promise.race([again.ended, new Promise((r) => setImmediate(() => r('pending')))]), 'pending', 'heard once: the next wait is held');
  clock.advance(60_000);
  assert.equal(await again.ended, 'timeout');
  const late = held(r.hold('n-0b', 1_000));
  clock.advance(1_000);
  assert.equal(await late.ended, 'timeout', 'the wake of n-0b was more than UNHEARD_MS old');
});

test('bounds: per node, per instance; a cancelled wait frees its slot; close ends every wait and takes no more', async () => {
  const clock = new FakeClock();
  const r = new WaitRegistry({ clock, maxWaits: 3, perNode: 2 });
  const w1 = held(r.hold('n-0a', 60_000));
  held(r.hold('n-0a', 60_000));
  assert.deepEqual(r.hold('n-0a', 60_000), { ok: false, busy: 'node' });
  const w3 = held(r.hold('n-0b', 60_000));
  assert.deepEqual(r.hold('n-0c', 60_000), { ok: false, busy: 'full' });
  w1.cancel();
  held(r.hold('n-0c', 60_000));
  r.close();
  assert.equal(await w3.ended, 'closing');
  assert.equal(r.size, 0);
  assert.deepEqual(r.hold('n-0d', 60_000), { ok: false, busy: 'full' });
});
