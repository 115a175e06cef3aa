// `steward-control release pack-steward` (docs/design.md §14): steward's own code as a release of the app
// steward, which a helper stages and verifies like any app's release once it is signed.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { REPO } from '../helpers/host.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
const dir = mkdtempSync(path.join(os.tmpdir(), 'pack-steward-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function control(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

async function entries(tgz: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  await tar.t({
    file: tgz,
    onentry: (e) => {
      const chunks: Buffer[] = [];
      e.on('data', (c: Buffer) => chunks.push(c));
      e.on('end', () => out.set(e.path.replace(/^\.\//, ''), Buffer.concat(chunks).toString('utf8')));
    },
  });
  return out;
}

test('pack-steward packs the built bundles as a release of steward at the given version, without the runtime, the units or the launcher', { timeout: 60_000 }, async () => {
  const out = path.join(dir, 'steward-2.0.0.tgz');
  const r = await control(['release', 'pack-steward', '--out', out, '--version', '2.0.0', '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual({ ...JSON.parse(r.stdout), size: 0 }, { app: 'steward', version: '2.0.0', file: out, size: 0 });
  const files = await entries(out);
  assert.deepEqual(JSON.parse(files.get('steward-release.json')!), { name: 'steward', version: '2.0.0', health: { stableMs: 5000 } });
  assert.equal(JSON.parse(files.get('package.json')!).version, '2.0.0');
  for (const p of ['steward-helper', 'steward-agent', 'agentctl']) {
    assert.ok(files.get(`bin/${p}.js`)?.startsWith('import '), `bin/${p}.js is a module without #!`);
    assert.ok([...files.keys()].some((f) => f.startsWith(`dist/bundle/${p}/`)), `the ${p} bundle is in`);
  }
  const names = [...files.keys()];
  assert.deepEqual(names.filter((f) => f.startsWith('systemd/') || f.startsWith('node/') || f.includes('node_modules')), []);
});

test('pack-steward never overwrites its output', { timeout: 30_000 }, async () => {
  const out = path.join(dir, 'taken.tgz');
  assert.equal((await control(['release', 'pack-steward', '--out', out])).code, 0);
  const again = await control(['release', 'pack-steward', '--out', out]);
  assert.notEqual(again.code, 0);
  assert.match(again.stderr, /exists/);
});
