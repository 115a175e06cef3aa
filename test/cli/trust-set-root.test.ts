import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { metadataBytes, newRoot } from '../../src/core/trust/build.js';
import { signMetadata, tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { agentctl } from '../helpers/host.js';
import { useHost } from '../helpers/host-fixture.js';
import { rotate } from '../helpers/tuf-host.js';
import { makeTufRepo, newKey } from '../helpers/tuf-repo.js';

// `agentctl trust set-root FILE` (docs/design.md §21): root's, through admin.sock; a file that is
// no TUF root whose own keys meet its threshold is refused with a clear error, as is a root below
// the one trusted; `status` shows the scheme and versions, human and --json.
test('agentctl trust set-root refuses what is not a usable root or an older one, and status shows the scheme', { timeout: 60_000 }, async (t) => {
  const host = useHost(t);
  await host.startHelper();
  const file = (name: string, bytes: Buffer | string) => {
    const f = path.join(host.scratch, name);
    writeFileSync(f, bytes);
    return f;
  };
  let st = await agentctl(host, ['status', '--json']);
  assert.deepEqual(st.json.trust, { scheme: 'keys' });
  assert.match((await agentctl(host, ['status'])).stdout, /trust: keys/);

  const notJson = await agentctl(host, ['trust', 'set-root', file('x.json', 'hello'), '--json']);
  assert.equal(notJson.code, 3, notJson.stderr);
  assert.equal(notJson.json.error.code, 'TRUST_INVALID');
  assert.match(notJson.json.error.message, /is not a usable TUF root: it is not TUF root metadata/);

  const keys = [newKey(), newKey(), newKey()];
  const short = newRoot({ rootKeys: keys.map(tufKeyOf), threshold: 2, snapshotKey: tufKeyOf(newKey()), timestampKey: tufKeyOf(newKey()), directorKey: tufKeyOf(newKey()), expires: Date.now() + 86_400_000 });
  signMetadata(short, keys[0]!);
  const r1 = await agentctl(host, ['trust', 'set-root', file('short.json', metadataBytes(short))]);
  assert.equal(r1.code, 3);
  assert.match(r1.stderr, /TRUST_INVALID.*its own keys do not meet its root threshold/s);

  const repo = makeTufRepo();
  rotate(repo);
  const ok = await agentctl(host, ['trust', 'set-root', file('2.root.json', repo.files.get('2.root.json')!), '--json']);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(ok.json, { ok: true, scheme: 'tuf', rootVersion: 2 });
  const older = await agentctl(host, ['trust', 'set-root', file('1.root.json', repo.files.get('1.root.json')!), '--json']);
  assert.equal(older.code, 3);
  assert.equal(older.json.error.code, 'TRUST_ROLLBACK');
  assert.match(older.json.error.message, /version 1, below version 2/);

  st = await agentctl(host, ['status', '--json']);
  assert.deepEqual(st.json.trust, { scheme: 'tuf', rootVersion: 2 });
  assert.match((await agentctl(host, ['status'])).stdout, /trust: tuf, root v2, no timestamp yet/);
});
