import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { prepareFileAtomic, readRegularFile, writeFileAtomic } from '../../src/platform/fs-atomic.js';

// The atomic replace and the no-follow read are made of synchronous calls around an async
// fsync (issue 8, row 3): what they promise is checked here, apart from any caller.

function tmpDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-fs-atomic-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('readRegularFile returns every byte of a file larger than its first buffer, and its owner and mode', async (t) => {
  const dir = tmpDir(t);
  const file = path.join(dir, 'big');
  const bytes = randomBytes(300_000);
  writeFileSync(file, bytes, { mode: 0o640 });
  const got = await readRegularFile(file, 1024 * 1024);
  assert.ok(got);
  assert.equal(Buffer.compare(got.bytes, bytes), 0);
  assert.equal(got.mode, 0o640 & ~process.umask());
  assert.equal(got.uid, process.getuid?.());
  const empty = path.join(dir, 'empty');
  writeFileSync(empty, '');
  assert.equal((await readRegularFile(empty, 10))?.bytes.length, 0);
});

test('readRegularFile: absent is null; larger than maxBytes, a symlink, a folder and a FIFO are refused', async (t) => {
  const dir = tmpDir(t);
  assert.equal(await readRegularFile(path.join(dir, 'none'), 10), null);
  const file = path.join(dir, 'f');
  writeFileSync(file, 'x'.repeat(11));
  await assert.rejects(readRegularFile(file, 10), (e: NodeJS.ErrnoException) => e.code === 'EFBIG');
  assert.equal((await readRegularFile(file, 11))?.bytes.toString(), 'x'.repeat(11));
  symlinkSync(file, path.join(dir, 'link'));
  await assert.rejects(readRegularFile(path.join(dir, 'link'), 100), /is a symlink/);
  await assert.rejects(readRegularFile(dir, 100), /is not a regular file/);
  // O_NONBLOCK: a FIFO with no writer must be refused, not block the event loop forever.
  execFileSync('mkfifo', [path.join(dir, 'fifo')]);
  await assert.rejects(readRegularFile(path.join(dir, 'fifo'), 100), /is not a regular file/);
});

test('writeFileAtomic writes every byte with the exact mode, whatever the umask, and leaves no temp file', async (t) => {
  const dir = tmpDir(t);
  const target = path.join(dir, 'state.json');
  writeFileSync(target, 'old');
  const body = randomBytes(200_000);
  const old = process.umask(0o077);
  try {
    await writeFileAtomic(target, body, 0o640);
  } finally {
    process.umask(old);
  }
  assert.equal(Buffer.compare(readFileSync(target), body), 0);
  assert.equal(statSync(target).mode & 0o7777, 0o640);
  await writeFileAtomic(target, 'text ünïcode\n');
  assert.equal(readFileSync(target, 'utf8'), 'text ünïcode\n');
  assert.deepEqual(readdirSync(dir), ['state.json']);
});

test('a step of writeFileAtomic that fails leaves the target as it was and no temp file behind', async (t) => {
  const dir = tmpDir(t);
  const target = path.join(dir, 'state.json');
  writeFileSync(target, 'old');
  for (const failing of ['write', 'fsync', 'rename'] as const) {
    const steps: string[] = [];
    const step = (op: string) => {
      steps.push(op);
      if (op === failing) throw Object.assign(new Error(`planned ${op}`), { code: 'EIO' });
    };
    await assert.rejects(writeFileAtomic(target, 'new', 0o600, { step }), new RegExp(`planned ${failing}`));
    assert.equal(steps.at(-1), failing, `the steps run in order up to ${failing}: ${steps.join(',')}`);
    assert.equal(readFileSync(target, 'utf8'), 'old');
    assert.deepEqual(readdirSync(dir), ['state.json'], `no temp file after a failed ${failing}`);
  }
  // A failed folder fsync comes after the rename: the new content is there, and the error is thrown.
  const steps: string[] = [];
  await assert.rejects(
    writeFileAtomic(target, 'new', 0o600, {
      step: (op) => {
        steps.push(op);
        if (op === 'fsyncdir') throw new Error('planned fsyncdir');
      },
    }),
    /planned fsyncdir/,
  );
  assert.deepEqual(steps, ['write', 'fsync', 'rename', 'fsyncdir']);
  assert.equal(readFileSync(target, 'utf8'), 'new');
  assert.deepEqual(readdirSync(dir), ['state.json']);
});

test('prepareFileAtomic changes nothing visible until commit; abandon leaves nothing behind', async (t) => {
  const dir = tmpDir(t);
  const a = path.join(dir, 'a.json');
  const b = path.join(dir, 'b.json');
  writeFileSync(a, 'old a');
  const pa = await prepareFileAtomic(a, 'new a', 0o600);
  const pb = await prepareFileAtomic(b, 'new b', 0o640);
  assert.equal(readFileSync(a, 'utf8'), 'old a', 'prepared, not committed: the target is unchanged');
  assert.equal(readdirSync(dir).filter((n) => n.endsWith('.tmp')).length, 2, 'two durable temp files wait');
  await pa.commit();
  assert.equal(readFileSync(a, 'utf8'), 'new a');
  await assert.rejects(pa.commit(), /committed twice/);
  pb.abandon();
  assert.deepEqual(readdirSync(dir), ['a.json'], 'abandon removed the temp file; b was never created');
  // A failed rename in commit removes the temp file too.
  const pc = await prepareFileAtomic(path.join(dir, 'c.json'), 'c', 0o600, {
    step: (op) => {
      if (op === 'rename') throw new Error('planned rename');
    },
  });
  await assert.rejects(pc.commit(), /planned rename/);
  assert.deepEqual(readdirSync(dir), ['a.json']);
});
