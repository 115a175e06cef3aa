import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Clock } from '../../../src/platform/clock.js';
import { stopMembers } from '../../../src/helper/runners/stop-members.js';
import type { Member } from '../../../src/helper/runners/app-members.js';

// A clock whose sleeps only move its time on, and are written down.
function fakeClock(): Clock & { sleeps: number[] } {
  let t = 1000;
  const sleeps: number[] = [];
  return { sleeps, now: () => t, monotonic: () => t, sleep: async (ms) => void (sleeps.push(ms), (t += ms)) };
}

// This process with another start time: found, never signalled (signalMember checks the start).
const stranger: Member = { pid: process.pid, startTicks: -1 };

test('after SIGKILL the leftovers are looked for again after 1, 2, 4 ... ms, then every pollMs', async () => {
  const clock = fakeClock();
  let looks = 0;
  const find = () => (++looks <= 8 ? [stranger] : []);
  const n = await stopMembers(find, 'app web', { clock, timeoutMs: 0, pollMs: 50 });
  assert.equal(n, 1);
  assert.equal(looks, 9);
  assert.deepEqual(clock.sleeps, [1, 2, 4, 8, 16, 32, 50]);
});

test('with a timeout, SIGTERM is followed by looks every pollMs until it has passed', async () => {
  const clock = fakeClock();
  let looks = 0;
  const find = () => (++looks <= 5 ? [stranger] : []);
  await stopMembers(find, 'app web', { clock, timeoutMs: 120, pollMs: 50 });
  assert.deepEqual(clock.sleeps, [50, 50, 20, 1]);
});

test('what outlives SIGKILL past killWaitMs is an error naming its pids', async () => {
  const clock = fakeClock();
  await assert.rejects(stopMembers(() => [stranger], 'app web', { clock, timeoutMs: 0, pollMs: 50, killWaitMs: 200 }), (err: Error) => {
    assert.match(err.message, new RegExp(`app web: pids ${process.pid} are still running after SIGKILL`));
    return true;
  });
  assert.deepEqual(clock.sleeps, [1, 2, 4, 8, 16, 32, 50, 50, 50]);
});

// A process on its way out has released its memory, and with it the environment that proved it
// the app's, before it is a zombie; an app can also overwrite its own environment. Either way
// `find` stops knowing a process that still runs: what was signalled is still waited for, and
// killed at the timeout (the daemonized-children test saw a dying daemon outlive the exit).
test('a signalled process that `find` no longer knows is still waited for, and killed at the timeout', async (t) => {
  const { spawn } = await import('node:child_process');
  const { readProcStatSync } = await import('../../../src/helper/runners/process-group.js');
  const { systemClock } = await import('../../../src/platform/clock.js');
  const child = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000)"], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.after(() => child.kill('SIGKILL'));
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  const pid = child.pid as number;
  const m: Member = { pid, startTicks: (readProcStatSync(pid) as { startTicks: number }).startTicks };
  let looks = 0;
  // Found at the first look only: the proof is gone at the next.
  const find = () => (++looks === 1 ? [m] : []);
  const n = await stopMembers(find, 'app web', { clock: systemClock, timeoutMs: 200, pollMs: 20 });
  assert.equal(n, 1);
  const st = readProcStatSync(pid);
  assert.ok(st === null || st.state === 'Z' || st.state === 'X', `the process ignoring SIGTERM was killed at the timeout (state ${st?.state})`);
  assert.ok(looks > 2, 'it was looked for again after `find` lost it');
});
