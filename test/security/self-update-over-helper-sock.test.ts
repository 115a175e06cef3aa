import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { callHelper } from '../../src/protocol/client.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, makeReleaseKey } from '../helpers/host.js';
import { stewardReleaseFiles } from '../helpers/self-release.js';

// The attack: a member of group steward (the agent, so whoever controls the control plane)
// rolls back, stops or downgrades steward itself over helper.sock, putting back or taking away the
// root helper that judges every other request. Rollback, stop, start and restart of the app
// steward are admin.sock only (docs/design.md §14); an update over helper.sock (what a rollout relays) is
// held to helper.sock's rules for any app: a signed manifest, no downgrade, no force, no path.
// A steward release signed by a key trusted for another app is refused on admin.sock too.

const host = useHost(after, { apps: { steward: { runner: 'self', stableMs: 0 } } });

before(async () => {
  await host.startHelper();
});

for (const op of ['rollback', 'stop', 'start', 'restart'] as const) {
  test(`${op} of the app steward over helper.sock is FORBIDDEN`, { timeout: 30_000 }, async () => {
    const err = (await callHelper(host.paths.helperSock, { v: 1, id: 1, op, app: 'steward' }).then(
      () => null,
      (e: unknown) => e,
    )) as { code?: string; message?: string } | null;
    assert.equal(err?.code, 'FORBIDDEN', `refused: ${err?.message}`);
    assert.match(err?.message ?? '', /steward itself.*admin\.sock/);
  });
}

for (const asked of ['allowDowngrade', 'force', 'allowUnsigned'] as const) {
  test(`an update of the app steward over helper.sock that asks for ${asked} is FORBIDDEN`, { timeout: 30_000 }, async () => {
    const request = { version: '0.1.0', manifest: { payload: 'e30=', sig: 'AA==', keyId: 'k' }, upload: 1, [asked]: true };
    const err = (await callHelper(host.paths.helperSock, { v: 1, id: 1, op: 'update', app: 'steward', ...request }).then(
      () => null,
      (e: unknown) => e,
    )) as { code?: string; message?: string } | null;
    assert.equal(err?.code, 'FORBIDDEN', `refused: ${err?.message}`);
    assert.match(err?.message ?? '', new RegExp(asked === 'allowDowngrade' ? 'downgrade' : asked === 'force' ? 'force' : 'unsigned'));
  });
}

test('a steward release signed by a key trusted only for another app is SIGNATURE_INVALID over admin.sock', { timeout: 60_000 }, async () => {
  const other = makeReleaseKey(host, ['web']);
  const rel = await stewardReleaseFiles(host.scratch, other, '2.0.0');
  const r = await agentctl(host, ['update', 'steward', '2.0.0', '--file', rel.tgz, '--manifest', rel.manifest, '--json']);
  assert.equal(r.json?.error?.code ?? r.json?.reason?.code, 'SIGNATURE_INVALID', r.stdout + r.stderr);
});
