// The README's "Watch a fleet in the browser" block, pasted into bash as it is (only its two ports
// changed to free ones): the steward-control it starts, from the bundle bin/ runs, serves the
// dashboard's files with their headers, and the token it prints logs in. The rest of the path (a
// rollout watched in the page) is test/ui/dashboard-in-a-browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../fixtures/app-releases.js';
import { request } from '../helpers/control-harness.js';
import { REPO } from '../helpers/host.js';
import { readmeShellBlocks } from '../helpers/readme.js';
import { waitFor } from '../helpers/systemd-container.js';

test('the README\'s dashboard block starts a control plane whose /ui/ serves the page and takes the printed token', { timeout: 120_000 }, async (t) => {
  const [fleet, admin] = [await freePort(), await freePort()];
  const block = readmeShellBlocks('## Watch a fleet in the browser').join('').replaceAll('127.0.0.1:8443', `127.0.0.1:${fleet}`).replaceAll('127.0.0.1:8444', `127.0.0.1:${admin}`);
  assert.notEqual(block, readmeShellBlocks('## Watch a fleet in the browser').join(''), 'the block names the ports it serves on');
  const home = mkdtempSync(path.join(os.tmpdir(), 'steward-readme-ui-'));
  let pid = 0;
  t.after(() => {
    if (pid) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // gone already
      }
    }
    rmSync(home, { recursive: true, force: true });
  });
  // The block's output goes to a file, not a pipe: the server it leaves running in the
  // background holds its standard output open, and spawnSync would wait on a pipe until its timeout.
  const outFile = path.join(home, 'block.out');
  const out = openSync(outFile, 'w');
  const r = spawnSync('bash', ['-euo', 'pipefail', '-c', `${block}echo "serve-pid $!"`], { cwd: REPO, env: { ...process.env, HOME: home, DEBUG: '' }, stdio: ['ignore', out, out], timeout: 60_000 });
  closeSync(out);
  const printed = readFileSync(outFile, 'utf8');
  pid = Number(/serve-pid (\d+)/.exec(printed)?.[1] ?? 0);
  assert.equal(r.status, 0, printed);
  const token = /^(so_[A-Za-z0-9_-]{32})$/m.exec(printed)?.[1];
  assert.ok(token, `operator add printed a token:\n${printed}`);
  const base = `http://127.0.0.1:${admin}`;
  const page = await waitFor('the dashboard', async () => {
    try {
      const a = await request(base, '/ui/', 'GET');
      return a.status === 200 ? a : null;
    } catch {
      return null;
    }
  }, 30_000, 100);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.match(String(page.headers['content-security-policy']), /default-src 'self'/);
  assert.equal(page.headers['x-content-type-options'], 'nosniff');
  const scripts = [...page.raw.toString('utf8').matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1] as string);
  assert.ok(scripts.length > 0, 'the page loads its script');
  for (const src of scripts) {
    const js = await request(base, new URL(src, `${base}/ui/`).pathname, 'GET');
    assert.equal(js.status, 200, src);
    assert.match(String(js.headers['content-type']), /javascript/);
  }
  const login = await request(base, '/ui/login', 'POST', JSON.stringify({ token }));
  assert.equal(login.status, 200, JSON.stringify(login.body));
  assert.match(String(login.headers['set-cookie']), /HttpOnly/i);
  const wrong = await request(base, '/ui/login', 'POST', JSON.stringify({ token: `so_${'A'.repeat(32)}` }));
  assert.equal(wrong.status, 401);
});
