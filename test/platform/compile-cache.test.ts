// agentctl's compile cache (src/platform/compile-cache.ts): where its folder is, and which
// folders it refuses. The folder's rule holds on every Node.js; the cache itself is Node 22.1+
// (test/security/compile-cache-in-a-folder-another-user-could-write.test.ts runs agentctl).
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { compileCacheDir, prepareCompileCacheDir, useCompileCache } from '../../src/platform/compile-cache.js';

const UID = process.geteuid?.() ?? 0;

function tempHome(t: TestContext): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-cc-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('the cache folder is $XDG_CACHE_HOME/steward/compile-cache when that is absolute, else under ~/.cache', () => {
  assert.equal(compileCacheDir({ XDG_CACHE_HOME: '/var/cache/u' }, '/home/u'), '/var/cache/u/steward/compile-cache');
  assert.equal(compileCacheDir({ XDG_CACHE_HOME: 'relative/cache' }, '/home/u'), '/home/u/.cache/steward/compile-cache', 'a relative XDG_CACHE_HOME is ignored, as the XDG rule says');
  assert.equal(compileCacheDir({}, '/root'), '/root/.cache/steward/compile-cache');
  assert.equal(compileCacheDir({}, ''), null, 'no home, no cache');
  assert.equal(compileCacheDir({}, 'home'), null, 'a relative home is no home');
});

test('a cache folder that is not there is made with mode 0700, folders above it included, and taken', async (t) => {
  const home = tempHome(t);
  const dir = path.join(home, '.cache/steward/compile-cache');
  assert.deepEqual(await prepareCompileCacheDir(dir, UID), { dir });
  for (const made of [dir, path.dirname(dir), path.dirname(path.dirname(dir))]) {
    assert.equal(statSync(made).mode & 0o777, 0o700, `${made} is private`);
  }
  assert.deepEqual(await prepareCompileCacheDir(dir, UID), { dir }, 'and taken again the next time');
});

test('a cache folder open to group or others is refused and left as it was', async (t) => {
  const dir = path.join(tempHome(t), 'cc');
  mkdirSync(dir);
  chmodSync(dir, 0o755);
  const r = await prepareCompileCacheDir(dir, UID);
  assert.deepEqual(r, { why: `${dir} is open to group or others (mode 755, not 700)` });
  assert.equal(statSync(dir).mode & 0o777, 0o755, 'its mode is not changed');
});

test('a folder above the cache that others can write is refused before anything is made in it', async (t) => {
  const open = path.join(tempHome(t), 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  const dir = path.join(open, '.cache/steward/compile-cache');
  const r = await prepareCompileCacheDir(dir, UID);
  assert.deepEqual(r, { why: `${open} is writable by group or others (mode 777)` });
  assert.equal(existsSync(path.join(open, '.cache')), false, 'nothing was made under the open folder');
});

test('a sticky folder above the cache is allowed: nobody else can rename what this user made in it', async (t) => {
  const sticky = path.join(tempHome(t), 'sticky');
  mkdirSync(sticky);
  chmodSync(sticky, 0o1777);
  const dir = path.join(sticky, 'me/compile-cache');
  assert.deepEqual(await prepareCompileCacheDir(dir, UID), { dir });
});

test('a cache folder that is a symlink is refused, though it leads to a private folder', async (t) => {
  const home = tempHome(t);
  const real = path.join(home, 'real');
  mkdirSync(real, { mode: 0o700 });
  const dir = path.join(home, 'cc');
  symlinkSync(real, dir);
  assert.deepEqual(await prepareCompileCacheDir(dir, UID), { why: `${dir} is a symlink` });
});

test('a cache folder that is a file is refused', async (t) => {
  const home = tempHome(t);
  const dir = path.join(home, 'cc');
  writeFileSync(dir, '');
  assert.deepEqual(await prepareCompileCacheDir(dir, UID), { why: `${dir} is not a folder` });
});

test('NODE_DISABLE_COMPILE_CACHE, or a Node.js without a compile cache, leaves it off and makes no folder', async (t) => {
  const home = tempHome(t);
  const env = { XDG_CACHE_HOME: home, NODE_DISABLE_COMPILE_CACHE: '1' };
  const r = await useCompileCache(env);
  const hasCache = typeof (module as { enableCompileCache?: unknown }).enableCompileCache === 'function';
  assert.deepEqual(r, { state: 'off', why: hasCache ? 'NODE_DISABLE_COMPILE_CACHE is set' : `Node.js ${process.version} has no compile cache (22.1 and later have one)` });
  assert.equal(existsSync(path.join(home, 'steward')), false);
});
