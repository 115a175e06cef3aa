import assert from 'node:assert/strict';
import os from 'node:os';
import { after, before, test } from 'node:test';
import { callHelper } from '../../src/protocol/client.js';
import { appStatus } from '../helpers/app-processes.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';

// The attack: a member of group steward puts a hold on an app over helper.sock and says in the
// request that root did it (`by`), so that `agentctl status` shows the hold as an operator's.
// A hold's `by` is who the peer is (SO_PEERCRED, docs/design.md §4), never what the request says.

const host = useHost(after, { apps: { web: processApp() } });
let me: string;

before(async () => {
  await host.startHelper();
  const { uid, username } = os.userInfo();
  me = `${username} (uid ${uid})`;
});

test('a stop over helper.sock that claims to be root holds the app in the name of its real peer', { timeout: 30_000 }, async () => {
  await callHelper(host.paths.helperSock, { v: 1, id: 1, op: 'stop', app: 'web', by: 'root (admin.sock)' });
  const web = await appStatus(host, 'web');
  assert.ok(web.hold, 'the stop holds the app');
  assert.equal(web.hold.by, `${me} over helper.sock`);
  assert.doesNotMatch(web.hold.by, /admin\.sock/);
  const rel = await agentctl(host, ['release-hold', 'web', '--json']);
  assert.equal(rel.code, 0, rel.stderr + rel.stdout);
});

test('a stop over admin.sock is held by its peer too, not by the name its request gives', { timeout: 30_000 }, async () => {
  await callHelper(host.paths.adminSock, { v: 1, id: 1, op: 'stop', app: 'web', by: 'the control plane' });
  const web = await appStatus(host, 'web');
  assert.equal(web.hold.by, `${me} over admin.sock`);
});
