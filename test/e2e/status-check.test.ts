import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { emptyAppState } from '../../src/core/state-schemas.js';
import { writeAppState } from '../../src/helper/state/app-state.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';

// `agentctl status --check` for monitoring scripts: its exit code says whether an app needs an
// operator; the document and the table are those of `status`.

const host = useHost(after, { apps: { web: processApp(), api: processApp() } });
before(() => host.startHelper());

test('status --check exits 0 while no app needs anyone', { timeout: 30_000 }, async () => {
  const r = await agentctl(host, ['status', '--check']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.equal(r.stderr, '');
});

test('status --check exits 3 once an app is held, and names the hold on stderr', { timeout: 30_000 }, async () => {
  const stop = await agentctl(host, ['stop', 'web']);
  assert.equal(stop.code, 0, stop.stderr + stop.stdout);
  const r = await agentctl(host, ['status', '--check']);
  assert.equal(r.code, 3, r.stderr + r.stdout);
  assert.match(r.stderr, /^agentctl: check: web: held by .* over admin\.sock since .* \(stop\), until release-hold$/m);
  assert.match(r.stdout, /^web /m, 'the table is printed as by status');
  const one = await agentctl(host, ['status', 'api', '--check']);
  assert.equal(one.code, 0, 'only the app asked for counts');
});

test('status --check exits 1 when an app is blocked, and --json prints the same document as status --json', { timeout: 30_000 }, async () => {
  await writeAppState(host.paths, 'api', { ...emptyAppState(), blocked: { reason: 'DISK_FULL', message: 'no space', since: Date.now() } });
  const r = await agentctl(host, ['status', '--check', '--json']);
  assert.equal(r.code, 1, r.stderr + r.stdout);
  const plain = await agentctl(host, ['status', '--json']);
  assert.equal(plain.code, 0);
  assert.deepEqual(r.json, plain.json);
  const human = await agentctl(host, ['status', '--check']);
  assert.equal(human.code, 1);
  assert.match(human.stderr, /^agentctl: check: api: BLOCKED DISK_FULL since/m);
  assert.match(human.stderr, /^agentctl: check: web: held by/m);
});
