import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { lookupUser } from '../../src/platform/users.js';
import { IS_ROOT, REPO } from '../helpers/host.js';
import { readableCopy } from '../helpers/readable-copy.js';
import { readmeShellBlocks } from '../helpers/readme.js';
import { skipUnlessCI } from '../helpers/skip.js';

// The README's "Try it by hand" blocks, pasted as they are into bash in the checkout: as root
// (the app then runs as nobody) and as an unprivileged user (nobody, from a copy of the code it
// can read, when the suite is root). So the README cannot drift from what works.

const HEADING = '### Try it by hand, in a temp folder';

interface Pasted {
  code: number | null;
  out: string;
  // What `mktemp -d` made its folders in (TMPDIR): the blocks must leave it empty.
  tmp: string;
}

function missingTools(): string | null {
  for (const tool of ['openssl', 'curl']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed (the README's block uses it)`;
  }
  return null;
}

// Runs the blocks in bash with a fresh terminal's environment, in `cwd`, as `user` (or as this
// process). `node` is the one running the tests, first on the PATH, as bin/*.js find it.
async function paste(t: TestContext, cwd: string, user: { uid: number; gid: number; home: string; name: string } | null): Promise<Pasted> {
  const script = readmeShellBlocks(HEADING).join('');
  // Stands for /tmp: others may pass through it (as root, nobody must reach its app's release).
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'steward-try-'));
  chmodSync(tmp, 0o755);
  if (user) chownSync(tmp, user.uid, user.gid);
  t.after(() => rmSync(tmp, { recursive: true, force: true }));
  const env = {
    PATH: `${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: user?.home ?? os.homedir(),
    USER: user?.name ?? os.userInfo().username,
    LOGNAME: user?.name ?? os.userInfo().username,
    LANG: 'C.UTF-8',
    TMPDIR: tmp,
  };
  const child = spawn('bash', ['-e', '-c', script], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...(user ? { uid: user.uid, gid: user.gid } : {}) });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  // Whatever happens, nothing it started outlives the test: its group (bash, the helper) and
  // the app, which runs in a session of its own.
  t.after(() => {
    kill(-(child.pid as number));
    for (const m of out.matchAll(/running pid (\d+)/g)) kill(Number(m[1]));
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  // A helper the blocks failed to stop would keep the pipes open: its group goes with bash.
  if (code !== 0) kill(-(child.pid as number));
  await closed;
  return { code, out, tmp };
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// What the blocks print, and that they left nothing behind: the update went active, the app
// answered, status and the verified receipt show it, and the helper and the app are gone.
function checkPasted(r: Pasted, who: string): void {
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /^hello \(none\) -> 1\.0\.0: active$/m, r.out);
  assert.match(r.out, /^hello from hello 1\.0\.0$/m, r.out);
  assert.match(r.out, /^hello\s+process\s+1\.0\.0\s+-\s+1\.0\.0\s+active\b.*held by .+ since .*; running pid \d+$/m, r.out);
  assert.match(r.out, /^1\s+hello\s+\S+\s+-→1\.0\.0\s+active\s+-\s+\S+\s+yes$/m, r.out);
  assert.match(r.out, /^hello stopped\b/m, r.out);
  assert.deepEqual(readdirSync(r.tmp), [], `the blocks remove their root prefix (${who})`);
  const helper = Number(/^helper pid (\d+), root /m.exec(r.out)?.[1]);
  const app = Number(/running pid (\d+)$/m.exec(r.out)?.[1]);
  assert.ok(helper > 0 && app > 0, r.out);
  assert.equal(alive(helper), false, 'the helper has exited');
  assert.equal(alive(app), false, 'the app is stopped');
}

test('the README\'s "Try it by hand" works pasted as it is, as root, the app running as nobody', { timeout: 180_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'this case needs root');
  const missing = missingTools();
  if (missing) return skipUnlessCI(t, missing);
  const r = await paste(t, REPO, null);
  checkPasted(r, 'root');
  assert.match(r.out, /steward:helper:runner started app=hello version=1\.0\.0 pid=\d+/, r.out);
});

test('the README\'s "Try it by hand" works pasted as it is, as an unprivileged user', { timeout: 180_000 }, async (t) => {
  const missing = missingTools();
  if (missing) return skipUnlessCI(t, missing);
  if (!IS_ROOT) return checkPasted(await paste(t, REPO, null), os.userInfo().username);
  // As root: as nobody, in a copy of the checkout it can read (readable-copy.ts).
  const nobody = await lookupUser('nobody');
  assert.ok(nobody, 'nobody is in /etc/passwd');
  // The bundles need no node_modules (docs/design.md §15): the copy has none.
  const code = readableCopy(['package.json', 'bin', 'dist/bundle', 'examples']);
  t.after(() => code.cleanup());
  const r = await paste(t, code.dir, { uid: nobody.uid, gid: nobody.gid, home: nobody.home, name: nobody.name });
  checkPasted(r, 'nobody');
  assert.match(r.out, /not running as root: apps run as this helper's own user/, r.out);
});
