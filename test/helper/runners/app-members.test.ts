import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { lookupUser } from '../../../src/platform/users.js';
import { readProcIdentity } from '../../../src/platform/proc-identity.js';
import { findAppMembers } from '../../../src/helper/runners/app-members.js';
import { IS_ROOT } from '../../helpers/host.js';
import { skipUnlessCI } from '../../helpers/skip.js';
import { waitFor } from '../../helpers/systemd-container.js';

// Which processes findAppMembers takes for the app's: only with a proof (the token as a whole
// variable of its environment, the recorded process, its group), and only of the app's user.

const TOKEN = '0123456789abcdef0123456789abcdef';

function sleeper(env: Record<string, string>, ids: { uid?: number; gid?: number } = {}): ChildProcess {
  return spawn('sleep', ['300'], { env: { PATH: '/usr/bin:/bin', ...env }, detached: true, stdio: 'ignore', ...ids });
}

async function started(...children: ChildProcess[]): Promise<number[]> {
  const pids = children.map((c) => c.pid as number);
  await waitFor('the sleepers to exec', async () => pids.every((p) => (cmdline(p) ?? '').startsWith('sleep')), 5000, 10);
  return pids;
}

function cmdline(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return null;
  }
}

test('the instance token proves a process only as a whole variable of its environment', async (t) => {
  const uid = process.getuid?.() as number;
  const holder = sleeper({ STEWARD_INSTANCE: TOKEN });
  const inside = sleeper({ OTHER: `STEWARD_INSTANCE=${TOKEN}` });
  const longer = sleeper({ STEWARD_INSTANCE: `${TOKEN}0` });
  const none = sleeper({});
  t.after(() => [holder, inside, longer, none].forEach((c) => c.kill('SIGKILL')));
  const [h] = await started(holder, inside, longer, none);
  const found = findAppMembers({ app: 'web', process: null, instance: TOKEN, uid }, { cgroupDir: null, scanEnviron: true }).map((m) => m.pid);
  assert.deepEqual(found, [h]);
  assert.deepEqual(findAppMembers({ app: 'web', process: null, instance: TOKEN, uid }, { cgroupDir: null, scanEnviron: false }), [], 'without the scan, the token is not looked for');
  assert.deepEqual(findAppMembers({ app: 'web', process: null, instance: null, uid }, { cgroupDir: null, scanEnviron: true }), [], 'no token, no proof');
});

test("a process of the app's group is the app's; with the token too, it is still not when another user runs it", async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'running processes as other users needs root');
  const nobody = await lookupUser('nobody');
  const daemon = await lookupUser('daemon');
  assert.ok(nobody && daemon);
  const app = sleeper({ STEWARD_INSTANCE: TOKEN }, { uid: nobody.uid, gid: nobody.gid });
  const other = sleeper({ STEWARD_INSTANCE: TOKEN }, { uid: daemon.uid, gid: daemon.gid });
  const root = sleeper({ STEWARD_INSTANCE: TOKEN });
  t.after(() => [app, other, root].forEach((c) => c.kill('SIGKILL')));
  const [a] = await started(app, other, root);
  const target = { app: 'web', process: null, instance: TOKEN, uid: nobody.uid };
  assert.deepEqual(findAppMembers(target, { cgroupDir: null, scanEnviron: true }).map((m) => m.pid), [a], 'only the one of the app user');
  // The recorded process itself, and its group, go by the same rule.
  const leader = await readProcIdentity(other.pid as number);
  assert.ok(leader);
  assert.deepEqual(findAppMembers({ ...target, process: leader, instance: null }, { cgroupDir: null, scanEnviron: false }), [], 'a recorded process of another user');
  const own = await readProcIdentity(a as number);
  assert.ok(own);
  assert.deepEqual(findAppMembers({ ...target, process: own, instance: null }, { cgroupDir: null, scanEnviron: false }).map((m) => m.pid), [a]);
});
