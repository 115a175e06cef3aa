import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO } from '../../helpers/host.js';
import { skipUnlessCI } from '../../helpers/skip.js';
import { bootOrSkip, systemdContainerSkipReason, waitFor } from '../../helpers/systemd-container.js';

// The test container (test/helpers/systemd-container.ts) goes away with everything in it however
// its test ends. Its systemd once outlived the test files of test/package/: their after hook
// removed the overlays' upper folders first, the container's systemd then refused to power off
// (poweroff.target was gone from its /usr), and the SIGKILL of systemd-nspawn that followed left
// the container's PID 1 running, re-parented to the machine's init.

// Neither running nor a zombie waiting for its parent.
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}

const cgroupsOf = (machine: string) => ['/sys/fs/cgroup/systemd', '/sys/fs/cgroup/unified', '/sys/fs/cgroup'].map((h) => path.join(h, machine)).filter((d) => existsSync(d));

test('stop() ends a container whose systemd refuses to power off, and removes its cgroups', { timeout: 120_000 }, async (t) => {
  const box = await bootOrSkip(t);
  if (!box) return;
  t.after(() => box.stop());
  // systemd loads poweroff.target from /usr when asked to power off; hidden, it refuses.
  const hide = await box.exec('/bin/sh', ['-c', 'mount -t tmpfs none /usr/lib/systemd/system']);
  assert.equal(hide.code, 0, hide.stderr);
  assert.notEqual((await box.exec('systemctl', ['cat', 'poweroff.target'])).code, 0, 'poweroff.target is still there');

  await box.stop();
  assert.ok(gone(box.pid), `the container's PID 1 (${box.pid}) is still running`);
  assert.deepEqual(cgroupsOf(box.machine), []);
});

test('a test process killed with its process group takes its container, overlays and all, with it', { timeout: 120_000 }, async (t) => {
  const reason = systemdContainerSkipReason();
  if (reason) return skipUnlessCI(t, reason);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-teardown-'));
  const upper = path.join(dir, 'usr');
  // What a test file does, in a process of its own: boot a container with an overlay, say where
  // it is, and go on; scripts/run-tests.js kills a file past its time with its whole process group.
  const script = `
    import { mkdirSync } from 'node:fs';
    import { bootSystemdContainer } from ${JSON.stringify(path.join(REPO, 'dist/test/helpers/systemd-container.js'))};
    mkdirSync(${JSON.stringify(upper)});
    const box = await bootSystemdContainer({ overlays: [['/usr', ${JSON.stringify(upper)}, '/usr']] });
    console.log(JSON.stringify({ pid: box.pid, machine: box.machine }));
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  let box: { pid: number; machine: string } | null = null;
  t.after(() => {
    // Should the watchdog fail, this test leaves nothing running either.
    if (box && !gone(box.pid)) process.kill(box.pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  box = await waitFor('the child to boot its container', async () => {
    const line = out.split('\n').find((l) => l.startsWith('{'));
    if (child.exitCode !== null) throw new Error(`the child exited: ${out}`);
    return line ? (JSON.parse(line) as { pid: number; machine: string }) : null;
  }, 90_000, 200);
  assert.ok(!gone(box.pid));
  assert.notDeepEqual(cgroupsOf(box.machine), []);

  process.kill(-child.pid!, 'SIGKILL');
  await exited;
  const { pid, machine } = box;
  await waitFor(`the container's PID 1 (${pid}) to end`, async () => gone(pid), 30_000, 100);
  await waitFor(`the cgroups of ${machine} to be removed`, async () => cgroupsOf(machine).length === 0, 30_000, 100);
});
