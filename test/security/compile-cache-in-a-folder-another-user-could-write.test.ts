import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { BIN, IS_ROOT, REPO } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';

// The attack: agentctl runs as root and keeps V8's compiled code of its modules in a compile
// cache (Node 22.1+), which Node checks against the modules' source but not for who wrote it.
// A user who could write the cache's folder, or any folder above it, could plant code that root
// then runs. agentctl uses the cache only in a folder that it alone can write
// (src/platform/compile-cache.ts); anywhere else it runs without one, and reads and makes nothing
// there. Node's own trace of the cache (NODE_DEBUG_NATIVE=COMPILE_CACHE) shows what it read.

const HAS_CACHE = typeof (module as { enableCompileCache?: unknown }).enableCompileCache === 'function';
const ANOTHER_USER = 65534;

function tempHome(t: TestContext): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-cc-home-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// `agentctl stage --help` (or `bin` with `args`) with HOME at `home`: its exit status and Node's
// cache trace. A command word loads its runner, run-stage.js here (scripts/bundle.ts).
function agentctlIn(home: string, bin = BIN.agentctl, args = ['stage', '--help']): { status: number | null; trace: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' };
  for (const k of ['XDG_CACHE_HOME', 'NODE_COMPILE_CACHE', 'NODE_DISABLE_COMPILE_CACHE']) delete env[k];
  const r = spawnSync(process.execPath, [bin, ...args], { env, encoding: 'utf8' });
  return { status: r.status, trace: r.stderr.split('\n').filter((l) => l.startsWith('[compile cache]')).join('\n') };
}

test('in a private home, the second agentctl run reads its modules from its own cache (Node 22.1+), and Node 20 makes none', (t) => {
  const home = tempHome(t);
  const dir = path.join(home, '.cache/steward/compile-cache');
  assert.equal(agentctlIn(home).status, 0);
  const second = agentctlIn(home);
  assert.equal(second.status, 0);
  if (!HAS_CACHE) {
    assert.equal(existsSync(path.join(home, '.cache')), false, `Node.js ${process.version} has no compile cache: nothing is made`);
    return;
  }
  assert.ok(readdirSync(dir).length > 0, 'the first run wrote its cache');
  assert.match(second.trace, new RegExp(`reading cache from ${dir}/.*agentctl/run-stage\\.js.*success`), `the second run read from the cache:\n${second.trace}`);
});

test('steward-control keeps its cache under the same rule: its second run reads from it, and a folder others can write gets none', (t) => {
  const home = tempHome(t);
  const dir = path.join(home, '.cache/steward/compile-cache');
  const control = (h: string) => agentctlIn(h, path.join(REPO, 'bin/steward-control.js'), ['rollout', '--help']);
  assert.equal(control(home).status, 0);
  const second = control(home);
  assert.equal(second.status, 0);
  if (!HAS_CACHE) {
    assert.equal(existsSync(path.join(home, '.cache')), false, `Node.js ${process.version} has no compile cache: nothing is made`);
    return;
  }
  // `rollout --help` runs the rollout command's own runner (run-rollout.js), as a named command does.
  assert.match(second.trace, new RegExp(`reading cache from ${dir}/.*steward-control/run-rollout\\.js.*success`), `the second run read from the cache:\n${second.trace}`);
  // The same rule as agentctl's: a home others can write (not sticky) gets nothing.
  const open = tempHome(t);
  chmodSync(open, 0o777);
  const r = control(open);
  assert.equal(r.status, 0);
  assert.equal(r.trace, '', 'no cache is read or written');
  assert.deepEqual(readdirSync(open), [], 'nothing is made in it');
});

test('a home folder that another user owns gets no cache: nothing is read from it or made in it', (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'giving the folder to another uid needs root');
  const home = tempHome(t);
  const theirs = path.join(home, '.cache');
  // What the other user left there: a cache folder of their own, with an entry in it.
  mkdirSync(path.join(theirs, 'steward/compile-cache'), { recursive: true, mode: 0o700 });
  writeFileSync(path.join(theirs, 'steward/compile-cache/planted'), 'not V8 code');
  for (const p of [theirs, path.join(theirs, 'steward'), path.join(theirs, 'steward/compile-cache')]) chownSync(p, ANOTHER_USER, ANOTHER_USER);
  const r = agentctlIn(home);
  assert.equal(r.status, 0, 'agentctl runs, without the cache');
  assert.equal(r.trace, '', 'Node was never given the folder');
  assert.deepEqual(readdirSync(path.join(theirs, 'steward/compile-cache')), ['planted'], 'nothing was written in it');
});

test('a cache folder symlinked to a folder another user owns gets no cache, and nothing is made there', (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'giving the folder to another uid needs root');
  const home = tempHome(t);
  const theirs = path.join(home, 'theirs');
  mkdirSync(theirs, { mode: 0o755 });
  chownSync(theirs, ANOTHER_USER, ANOTHER_USER);
  mkdirSync(path.join(home, '.cache'), { mode: 0o755 });
  symlinkSync(theirs, path.join(home, '.cache/steward'));
  const r = agentctlIn(home);
  assert.equal(r.status, 0);
  assert.equal(r.trace, '');
  assert.deepEqual(readdirSync(theirs), [], 'no folder was made through the link');
});

test('a home under a folder that others can write, not sticky, gets no cache, and nothing is made', (t) => {
  const open = path.join(tempHome(t), 'open');
  mkdirSync(open);
  // Why chmod: mkdir's mode is cut by the umask; this folder must be writable by all.
  chmodSync(open, 0o777);
  const home = path.join(open, 'home');
  mkdirSync(home, { mode: 0o700 });
  const r = agentctlIn(home);
  assert.equal(r.status, 0);
  assert.equal(r.trace, '');
  assert.equal(existsSync(path.join(home, '.cache')), false);
});
