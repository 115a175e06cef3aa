import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { acquireHelperLock } from '../../src/platform/lock.js';
import { parseStartTicks, readProcIdentity } from '../../src/platform/proc-identity.js';
import { rejectsWithCode } from '../helpers/api-server-harness.js';
import { waitFor } from '../helpers/systemd-container.js';

const HOLDER = fileURLToPath(new URL('../fixtures/hold-helper-lock.js', import.meta.url));
const noCompromise = (err: Error) => assert.fail(`lock compromised: ${err.message}`);

function tempLock(): { lockPath: string; cleanup(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-lock-'));
  return { lockPath: path.join(dir, 'helper.lock'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

async function holdInChild(lockPath: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [HOLDER, lockPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  child.stdout!.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: string) => (d.includes('locked') ? resolve() : reject(new Error(d))));
    child.once('exit', (code) => reject(new Error(`holder exited ${code}`)));
  });
  return child;
}

test('field 22 of /proc/<pid>/stat is read after the last ")", even when the name holds ") ("', () => {
  const fields = Array.from({ length: 50 }, (_, i) => String(i + 3)).join(' ');
  assert.equal(parseStartTicks(`123 (evil) 1 2 (name) ${fields}`), 22);
  assert.equal(parseStartTicks('garbage'), null);
});

test('a second locker gets HELPER_LOCKED naming the holder pid, and gets the lock after release', async () => {
  const { lockPath, cleanup } = tempLock();
  try {
    const first = await acquireHelperLock(lockPath, { onCompromised: noCompromise });
    const owner = JSON.parse(readFileSync(path.join(lockPath, 'owner.json'), 'utf8')) as { pid: number; startTicks: number };
    assert.deepEqual(owner, { ...(await readProcIdentity(process.pid)) });
    const err = await rejectsWithCode(acquireHelperLock(lockPath, { onCompromised: noCompromise }), 'HELPER_LOCKED');
    assert.equal(err.message, `another steward-helper (pid ${process.pid}) holds ${lockPath}`);
    await first.release();
    assert.equal(existsSync(lockPath), false);
    const second = await acquireHelperLock(lockPath, { onCompromised: noCompromise });
    await second.release();
  } finally {
    cleanup();
  }
});

test('a lock left by a SIGKILLed helper is taken over at once', async () => {
  const { lockPath, cleanup } = tempLock();
  try {
    const child = await holdInChild(lockPath);
    await rejectsWithCode(acquireHelperLock(lockPath, { onCompromised: noCompromise }), 'HELPER_LOCKED');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    assert.equal(existsSync(lockPath), true, 'SIGKILL leaves the lock folder behind');
    const t0 = performance.now();
    const lock = await acquireHelperLock(lockPath, { onCompromised: noCompromise });
    const ms = performance.now() - t0;
    assert.ok(ms < 2000, `took ${ms} ms`);
    const owner = JSON.parse(readFileSync(path.join(lockPath, 'owner.json'), 'utf8')) as { pid: number };
    assert.equal(owner.pid, process.pid);
    await lock.release();
  } finally {
    cleanup();
  }
});

test('a live holder is never taken over, even when its lock looks stale by mtime', async () => {
  const { lockPath, cleanup } = tempLock();
  const child = await holdInChild(lockPath);
  try {
    for (let i = 0; i < 3; i++) {
      const err = await rejectsWithCode(acquireHelperLock(lockPath, { onCompromised: noCompromise }), 'HELPER_LOCKED');
      assert.match(err.message, new RegExp(`pid ${child.pid}`));
    }
    // An mtime older than `stale` makes proper-lockfile try a takeover; owner.json stops it.
    const { utimesSync } = await import('node:fs');
    utimesSync(lockPath, 0, 0);
    await rejectsWithCode(acquireHelperLock(lockPath, { onCompromised: noCompromise }), 'HELPER_LOCKED');
    assert.equal(existsSync(path.join(lockPath, 'owner.json')), true);
    assert.equal(child.exitCode, null, 'the holder still runs');
  } finally {
    child.kill('SIGKILL');
    cleanup();
  }
});

test('writing owner.json does not make the holder think its lock was taken over', async () => {
  const { lockPath, cleanup } = tempLock();
  try {
    let compromised: Error | null = null;
    // The shortest refresh proper-lockfile allows, so several refreshes run in the test.
    const lock = await acquireHelperLock(lockPath, { stale: 2000, update: 1000, onCompromised: (e) => (compromised = e) });
    await new Promise((r) => setTimeout(r, 2600));
    assert.equal(compromised, null);
    await lock.release();
    assert.equal(existsSync(lockPath), false);
  } finally {
    cleanup();
  }
});

// The refresh runs its stat and utimes synchronously (lock.ts refreshFs, fewer wakeups when idle):
// it must still move the lock's mtime, and still see another process's change of it.
test('a held lock is refreshed: its mtime moves forward at each refresh', async () => {
  const { lockPath, cleanup } = tempLock();
  try {
    const lock = await acquireHelperLock(lockPath, { stale: 2000, update: 1000, onCompromised: noCompromise });
    const first = statSync(lockPath).mtimeMs;
    await waitFor('a refresh', async () => statSync(lockPath).mtimeMs > first, 20_000, 50);
    await lock.release();
  } finally {
    cleanup();
  }
});

test('a lock whose mtime another process moved is reported compromised at the next refresh', async () => {
  const { lockPath, cleanup } = tempLock();
  try {
    let compromised: Error | null = null;
    const lock = await acquireHelperLock(lockPath, { stale: 2000, update: 1000, onCompromised: (e) => (compromised = e) });
    utimesSync(lockPath, new Date(5_000_000), new Date(5_000_000));
    const err = await waitFor('the refresh to see it', async () => compromised, 20_000, 50);
    assert.match(err.message, /stale threshold/);
    await lock.release().catch(() => {});
  } finally {
    cleanup();
  }
});

// A process that has exited, with the identity it had: pid, start ticks and boot id.
async function deadIdentity(): Promise<{ pid: number; startTicks: number; bootId: string }> {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)'], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 100));
  const who = await readProcIdentity(child.pid as number);
  assert.ok(who, 'the child is running');
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  return who;
}

test('a lock whose owner died before recording itself is taken over at once, and its intent removed', async () => {
  const { lockPath, cleanup } = tempLock();
  try {
    // What a SIGKILL between proper-lockfile's mkdir and the owner record leaves behind.
    const dead = await deadIdentity();
    mkdirSync(lockPath);
    const intent = `${lockPath}.owner-${dead.pid}`;
    writeFileSync(intent, JSON.stringify(dead));
    const lock = await acquireHelperLock(lockPath, { onCompromised: noCompromise });
    const owner = JSON.parse(readFileSync(path.join(lockPath, 'owner.json'), 'utf8')) as { pid: number };
    assert.equal(owner.pid, process.pid);
    assert.equal(existsSync(intent), false, "the dead process's intent is gone");
    assert.equal(existsSync(`${lockPath}.owner-${process.pid}`), false, 'our intent became owner.json');
    await lock.release();
  } finally {
    cleanup();
  }
});

test('a lock without owner.json is not taken over while the process that meant to take it lives', async () => {
  const { lockPath, cleanup } = tempLock();
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
  try {
    await new Promise((r) => setTimeout(r, 100));
    const live = await readProcIdentity(child.pid as number);
    mkdirSync(lockPath);
    writeFileSync(`${lockPath}.owner-${child.pid}`, JSON.stringify(live));
    const err = await rejectsWithCode(acquireHelperLock(lockPath, { onCompromised: noCompromise }), 'HELPER_LOCKED');
    assert.match(err.message, new RegExp(`pid ${child.pid}`));
    assert.equal(existsSync(`${lockPath}.owner-${process.pid}`), false, 'a refused locker leaves no intent behind');
  } finally {
    child.kill('SIGKILL');
    cleanup();
  }
});
