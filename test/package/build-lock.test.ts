import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BUILD_LOCK, withBuildLock } from '../../scripts/package/build-lock.js';
import { finishDeb } from '../../scripts/package/deb.js';
import { StewardError } from '../../src/core/errors.js';
import { skipUnlessCI } from '../helpers/skip.js';

// `npm run package` builds into one folder at a time (scripts/package/build-lock.ts), and a .deb
// appears under its name only whole (finishDeb).

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');

function tempOut(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-build-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('a second build into the folder is BUSY while the first runs, and goes ahead once it ended, however it ended', async (t) => {
  const out = tempOut(t);
  let release!: () => void;
  const first = withBuildLock(out, () => new Promise<string>((r) => (release = () => r('first'))));
  // Held once its owner record is in: a second acquisition started before that, in this same
  // process, would write the same pid's intent file as the first (src/platform/lock.ts).
  for (let waited = 0; !existsSync(path.join(out, BUILD_LOCK, 'owner.json')); waited += 20) {
    assert.ok(waited < 30_000, 'the first build took the lock');
    await new Promise((r) => setTimeout(r, 20));
  }
  let ran = false;
  await assert.rejects(
    withBuildLock(out, async () => {
      ran = true;
    }),
    (e: StewardError) => e.code === 'BUSY' && /another npm run package \(pid \d+/.test(e.message) && e.message.includes(path.join(out, BUILD_LOCK)) && /wait for it to end, or build elsewhere with --out DIR/.test(e.message),
  );
  assert.equal(ran, false, 'the refused build did nothing');
  release();
  assert.equal(await first, 'first');
  assert.equal(existsSync(path.join(out, BUILD_LOCK)), false, 'the lock is gone with the build');
  // A build that throws gives the lock up too.
  await assert.rejects(withBuildLock(out, async () => Promise.reject(new Error('dpkg-deb failed'))), /dpkg-deb failed/);
  assert.equal(await withBuildLock(out, async () => 'third'), 'third');
  assert.deepEqual(readdirSync(out), [], 'nothing of the lock is left in the folder');
});

test('a build that was killed holding the lock blocks nobody', async (t) => {
  const out = tempOut(t);
  const lockModule = pathToFileURL(path.join(here, '../../scripts/package/build-lock.js')).href;
  const script = `const { withBuildLock } = await import(${JSON.stringify(lockModule)});
    await withBuildLock(process.argv[1], () => { process.stdout.write('held\\n'); return new Promise(() => {}); });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, out], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => c.toString().includes('held') && resolve());
    child.once('exit', (code) => reject(new Error(`the holder exited ${code}`)));
  });
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  assert.equal(existsSync(path.join(out, BUILD_LOCK)), true, 'the killed build left its lock');
  assert.equal(await withBuildLock(out, async () => 'after'), 'after');
});

test('a .deb that cannot be put in place leaves no part of one; a dpkg-deb that fails leaves nothing', (t) => {
  if (spawnSync('dpkg-deb', ['--version']).status !== 0) return skipUnlessCI(t, 'dpkg-deb is not installed');
  const out = tempOut(t);
  const debs = path.join(out, 'debs');
  const control = { name: 'steward', version: '1.0.0', depends: 'libc6', description: ['x'] };
  // dpkg-deb builds it whole, and the rename onto its name fails: a folder is in the way.
  const root = path.join(out, 'root');
  mkdirSync(root);
  mkdirSync(path.join(debs, 'steward_1.0.0_amd64.deb', 'in-the-way'), { recursive: true });
  assert.throws(() => finishDeb(repo, root, debs, control, 'gzip'));
  assert.deepEqual(readdirSync(debs), ['steward_1.0.0_amd64.deb'], 'only the folder that was in the way');
  // A version dpkg-deb refuses in DEBIAN/control: it fails before writing anything.
  const other = path.join(out, 'other');
  const root2 = path.join(out, 'root2');
  mkdirSync(root2);
  assert.throws(() => finishDeb(repo, root2, other, { ...control, version: 'not a version' }, 'gzip'));
  assert.deepEqual(readdirSync(other), []);
});
