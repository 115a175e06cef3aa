import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync } from 'node:fs';
import path from 'node:path';
import { BIN, IS_ROOT, makeHost, type TestHost } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';

// The attack: a root-owned 0644 steward.json in a folder someone else may write or owns
// (etc/steward/, or etc/ under the root prefix). They may rename it away and put their own
// config in its place: apps, users and commands root then runs. The helper refuses to start,
// naming the folder and the rule.

function helperStart(host: TestHost): { code: number | null; stderr: string } {
  // A refused config ends the helper at once; one it accepted would run until the timeout.
  const r = spawnSync(process.execPath, [BIN.helper, '--root', host.root], { encoding: 'utf8', timeout: 5_000, killSignal: 'SIGTERM', env: { ...process.env, DEBUG: '' } });
  return { code: r.status, stderr: r.stderr };
}

function assertRefused(host: TestHost, says: string): void {
  const r = helperStart(host);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /CONFIG_INVALID/);
  assert.ok(r.stderr.includes(says), `the refusal says "${says}": ${r.stderr}`);
  assert.match(r.stderr, /must be owned by root/, 'the message states the rule');
}

for (const which of ['etc/steward', 'etc'] as const) {
  test(`a config under a group-writable ${which}/ is refused at the helper's start`, () => {
    const host = makeHost({ apps: {} });
    const folder = which === 'etc' ? path.dirname(path.dirname(host.paths.configFile)) : path.dirname(host.paths.configFile);
    try {
      chmodSync(folder, 0o775);
      assertRefused(host, `${folder} is writable by group or others (mode 775)`);
    } finally {
      host.cleanup();
    }
  });

  test(`a config under an ${which}/ another user owns is refused at the helper's start`, (t) => {
    if (!IS_ROOT) return skipUnlessCI(t, 'giving a folder to another uid needs root');
    const host = makeHost({ apps: {} });
    const folder = which === 'etc' ? path.dirname(path.dirname(host.paths.configFile)) : path.dirname(host.paths.configFile);
    try {
      chownSync(folder, 65534, 65534);
      assertRefused(host, `${folder} is owned by uid 65534, not root`);
    } finally {
      host.cleanup();
    }
  });
}
