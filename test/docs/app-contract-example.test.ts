import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, REPO, sri } from '../helpers/host.js';
import { fetchVersion, freePort } from '../fixtures/app-releases.js';
import { gzipTar, makeTar } from '../fixtures/tar-writer.js';
import { helperStatus } from '../helpers/helper-status.js';

// docs/app-contract.md's snippet is examples/ready-and-watchdog/steward-contract.mjs, word for word,
// and the sample built on it passes an activation that waits for its readiness and keeps a short
// watchdog fed, with a real helper.

const repo = REPO;
const example = path.join(repo, 'examples/ready-and-watchdog');

test("docs/app-contract.md's snippet is the example's steward-contract.mjs", () => {
  const doc = readFileSync(path.join(repo, 'docs/app-contract.md'), 'utf8');
  const m = /## The snippet[^\n]*\n\n```js\n([\s\S]*?)```/.exec(doc);
  assert.ok(m, 'the doc has a js block under "The snippet"');
  assert.equal(m[1], readFileSync(path.join(example, 'steward-contract.mjs'), 'utf8'));
});

test('the example says it is ready and feeds a 300 ms watchdog: active, and never killed', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) }, supervisor: { sweepMs: 500, pollMs: 100 } });
  await host.startHelper();
  const port = await freePort();
  const release = JSON.parse(readFileSync(path.join(example, 'steward-release.json'), 'utf8'));
  assert.deepEqual([release.start.ready, typeof release.start.watchdogMs], ['fd', 'number'], 'the example opts in to both');
  release.name = 'web';
  release.start.env.PORT = String(port);
  release.start.watchdogMs = 300;
  release.health = { ...release.health, http: `http://127.0.0.1:${port}/healthz`, stableMs: 200 };
  const files = ['server.mjs', 'steward-contract.mjs'].map((f) => ({ path: f, content: readFileSync(path.join(example, f), 'utf8') }));
  const tgz = gzipTar(makeTar([{ path: 'steward-release.json', content: JSON.stringify(release) }, ...files]));
  const file = path.join(host.scratch, 'web.tgz');
  writeFileSync(file, tgz);
  const r = await agentctl(host, ['update', 'web', '1.0.0', '--file', file, '--integrity', sri(tgz), '--allow-unsigned', '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(r.json.outcome, 'active');
  const before = (await helperStatus(host.root))?.apps.find((a: any) => a.name === 'web').supervisor;
  // Several deadlines of 300 ms.
  await new Promise((res) => setTimeout(res, 1500));
  const after = (await helperStatus(host.root))?.apps.find((a: any) => a.name === 'web').supervisor;
  assert.deepEqual([after.pid, after.attempts, after.lastExit], [before.pid, 0, null], 'the same process, fed');
  assert.match((await fetchVersion(port)) ?? '', /hello from web 1\.0\.0/);
});
