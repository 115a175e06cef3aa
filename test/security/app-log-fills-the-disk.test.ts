import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { appLogFile } from '../../src/core/paths.js';
import { freePort, releaseArgs } from '../fixtures/app-releases.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { waitFor } from '../helpers/systemd-container.js';

// Attack (or a chatty bug): an app under the detached runner writes without end. Its output goes
// to /var/log/steward/<app>.log, which the app writes itself (the helper holds no pipe), so
// nothing held it: the app could fill the disk the release store and the journal need. The
// helper caps the file at the app's logMaxBytes, keeping its newest part.

const CAP = 64 * 1024;
const LINES = 8000;
const LINE_BYTES = 100;

test("an app's log file is held to its logMaxBytes, its newest lines kept whole and in order", { timeout: 90_000 }, async (t) => {
  const host = useHost(t, { apps: { web: processApp({ logMaxBytes: CAP }) }, supervisor: { sweepMs: 500, pollMs: 100, logCheckMs: 100 } });
  await host.startHelper();
  const port = await freePort();
  const spam = { lines: LINES, lineBytes: LINE_BYTES };
  const up = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { spam, stableMs: 200 }), '--json']);
  assert.equal(up.code, 0, up.stdout + up.stderr);
  const done = path.join(host.paths.appStateRoot, 'web', 'spam-done');
  await waitFor('the app to write its 800 KB', async () => existsSync(done), 60_000, 50);
  const file = appLogFile(host.paths, 'web');
  await waitFor(`the log to be held to ${CAP} bytes (it is ${statSync(file).size})`, async () => statSync(file).size <= CAP, 20_000, 50);

  const lines = readFileSync(file, 'utf8').split('\n');
  assert.equal(lines.pop(), '', 'the file ends with a whole line');
  const numbers = lines.filter((l) => l.startsWith('line ')).map((l) => Number(l.slice(5, 14)));
  assert.ok(numbers.length > 0);
  assert.equal(numbers[numbers.length - 1], LINES - 1, 'the newest line is kept');
  // In order; not necessarily without a gap: a line written at the very instant of a cut is lost
  // (log-cap.ts), as with logrotate's copytruncate.
  assert.ok(numbers.every((n, i) => i === 0 || n > numbers[i - 1]!), 'the lines kept are in order');
  assert.ok(numbers.length >= Math.floor(CAP / 2 / LINE_BYTES) - 1, `at least the newest half of the cap is kept: ${numbers.length} lines`);
  for (const l of lines.filter((x) => x.startsWith('line '))) assert.equal(l.length + 1, LINE_BYTES, `a whole line: ${l.slice(0, 20)}...`);
  const rec = JSON.parse(readFileSync(path.join(host.paths.supervisorDir, 'web.json'), 'utf8'));
  assert.ok(rec.logOffset <= statSync(file).size, `the record's logOffset (${rec.logOffset}) is inside the file`);
});
