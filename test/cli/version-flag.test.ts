import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../helpers/host.js';

const VERSION = (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;

function run(bin: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(REPO, 'bin', `${bin}.js`), ...args], (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

for (const bin of ['agentctl', 'steward-helper', 'steward-agent', 'steward-control']) {
  test(`${bin} --version and -V print the steward version from package.json and exit 0`, async () => {
    for (const flag of ['--version', '-V']) {
      const r = await run(bin, [flag]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `${VERSION}\n`);
    }
  });
}

test('steward-helper and steward-agent exit 0 on --help and 2 on an unknown option', async () => {
  for (const bin of ['steward-helper', 'steward-agent']) {
    assert.equal((await run(bin, ['--help'])).code, 0, bin);
    assert.equal((await run(bin, ['--no-such-option'])).code, 2, bin);
  }
});

test('steward-control release pack-agent --version packs that version: the program option -V/--version does not take it', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-pack-version-'));
  try {
    const out = path.join(dir, 'agent.tgz');
    const r = await run('steward-control', ['release', 'pack-agent', '--out', out, '--version', '7.7.7', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).version, '7.7.7');
    assert.ok(statSync(out).size > 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
