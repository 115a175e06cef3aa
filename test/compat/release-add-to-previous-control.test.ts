// docs/design.md §20.2 during a rolling upgrade: this release's `steward-control release add --server`
// against the previous release's steward-control, whose strict operation input has no
// `indexedManifest`. The CLI asks again with the plain manifest alone, says so, and the release
// is added as that server would have added it.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { appRelease } from '../fixtures/app-releases.js';
import { CONTROL_BIN, startServeProcess } from '../helpers/serve-process.js';
import { buildPreviousRelease, previousReleaseMissing, PREVIOUS_RELEASE, type Build } from './previous-release.js';

const missing = previousReleaseMissing();
let previous: (Build & { remove(): void }) | null = null;
const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-add-to-previous-'));
before(async () => {
  if (missing) console.log(`# skipped: ${missing}`);
  else previous = await buildPreviousRelease();
});
after(() => {
  previous?.remove();
  rmSync(dir, { recursive: true, force: true });
});

function run(bin: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, DEBUG: '', STEWARD_CONTROL_DB: '', STEWARD_CONTROL_URL: '', STEWARD_CONTROL_TOKEN: '', ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

test(`release add --server to the previous steward-control (${PREVIOUS_RELEASE.slice(0, 8)}) adds the plain manifest alone and says why`, { timeout: 120_000 }, async (t) => {
  if (!previous) return t.skip(missing ?? 'no previous release');
  const db = path.join(dir, 'control.db');
  const old = previous.bin.control;
  assert.equal((await run(old, ['--db', db, 'init', '--json'])).code, 0);
  const admin = await run(old, ['--db', db, 'operator', 'add', 'adam', '--role', 'admin', '--json']);
  assert.equal(admin.code, 0, admin.stderr);
  const serve = await startServeProcess(db, ['--admin-listen', '127.0.0.1:0'], { bin: old });
  try {
    const env = { STEWARD_CONTROL_TOKEN: JSON.parse(admin.stdout).token };
    const remote = ['--server', serve.urls.admin as string];
    const keys = await run(CONTROL_BIN, ['keys', 'create', '--out', path.join(dir, 'keys'), '--json']);
    const file = path.join(dir, 'web-1.0.0.tgz');
    writeFileSync(file, appRelease('web', '1.0.0', 0));
    const add = await run(CONTROL_BIN, [...remote, 'release', 'add', 'web', '1.0.0', '--file', file, '--base-url', serve.urls.listening, '--key', JSON.parse(keys.stdout).privateKeyFile, '--json'], env);
    assert.equal(add.code, 0, add.stdout + add.stderr);
    const out = JSON.parse(add.stdout);
    assert.equal(out.change, 'added');
    assert.equal('index' in out.payload, false);
    assert.match(out.indexSkipped?.message ?? '', /from before indexed manifests/);
    // Another refusal of the old server is final: other bytes under the same version.
    const other = path.join(dir, 'web-1.0.0-other.tgz');
    writeFileSync(other, appRelease('web', '1.0.0', 1));
    const bad = await run(CONTROL_BIN, [...remote, 'release', 'add', 'web', '1.0.0', '--file', other, '--base-url', serve.urls.listening, '--key', JSON.parse(keys.stdout).privateKeyFile, '--json'], env);
    assert.equal(bad.code, 3, bad.stdout + bad.stderr);
    assert.equal(JSON.parse(bad.stdout).error.code, 'RELEASE_EXISTS');
    const listed = JSON.parse((await run(old, ['--db', db, 'release', 'list', '--json'])).stdout);
    assert.deepEqual(listed.releases.map((r: { version: string }) => r.version), ['1.0.0']);
  } finally {
    await serve.stop();
  }
});
