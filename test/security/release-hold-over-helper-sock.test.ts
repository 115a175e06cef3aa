import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { callHelper } from '../../src/protocol/client.js';
import { appStatus } from '../helpers/app-processes.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';

// The attack: an operator stops (or rolls back) an app, which holds it; a member of group steward
// (the agent, so whoever controls the control plane) lifts the hold over helper.sock and then
// undoes the operator's action. release-hold is admin.sock only (docs/design.md §4, §7).

const host = useHost(after, { apps: { web: processApp() } });

before(async () => {
  await host.startHelper();
  const stop = await agentctl(host, ['stop', 'web', '--json']);
  assert.equal(stop.code, 0, stop.stderr + stop.stdout);
  assert.ok((await appStatus(host, 'web')).hold, 'the operator stop holds the app');
});

test('release-hold over helper.sock is FORBIDDEN and the hold stays', { timeout: 30_000 }, async () => {
  const err = (await callHelper(host.paths.helperSock, { v: 1, id: 1, op: 'release-hold', app: 'web' }).then(
    () => null,
    (e: unknown) => e,
  )) as { code?: string; message?: string } | null;
  assert.equal(err?.code, 'FORBIDDEN', 'the helper refused it');
  assert.match(err?.message ?? '', /admin\.sock/);
  assert.ok((await appStatus(host, 'web')).hold, 'still held');
});

test('agentctl release-hold over helper.sock exits 3 (refused) and changes nothing', { timeout: 30_000 }, async () => {
  const r = await agentctl(host, ['--socket', host.paths.helperSock, 'release-hold', 'web', '--json']);
  assert.equal(r.code, 3, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'FORBIDDEN');
  assert.ok((await appStatus(host, 'web')).hold, 'still held');
  const start = await agentctl(host, ['--socket', host.paths.helperSock, 'start', 'web', '--json']);
  assert.equal(start.json?.error?.code, 'HELD', start.stderr + start.stdout);
});
