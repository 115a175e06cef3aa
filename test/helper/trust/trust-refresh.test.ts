import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import type { TrustBundle } from '../../../src/core/control-api.js';
import { StewardError } from '../../../src/core/errors.js';
import { hostPaths } from '../../../src/core/paths.js';
import { rotateRoot } from '../../../src/core/trust/build.js';
import { signMetadata, tufKeyOf } from '../../../src/platform/trust/tuf-keys.js';
import { readTrustState, refreshTrust, setTrustedRoot, storedTargets } from '../../../src/helper/trust/tuf-client.js';
import { metadataDir, scheme } from '../../../src/helper/trust/trust-store.js';
import { makeTufRepo, newKey, type TufRepo } from '../../helpers/tuf-repo.js';
import { scratchDir } from '../../helpers/scratch.js';

const DAY = 86_400_000;
const bundleOf = (repo: TufRepo, names?: string[]): TrustBundle => ({
  v: 1,
  files: Object.fromEntries([...repo.files].filter(([n]) => !names || names.includes(n)).map(([n, b]) => [n, b.toString('base64')])),
});
const refusal = (code: string) => (err: unknown) => {
  assert.ok(err instanceof StewardError, String(err));
  assert.equal(err.code, code, err.message);
  return true;
};

test('a host trusts a root, then whatever of a bundle verifies from it; a bundle that does not verify changes nothing', async () => {
  const paths = hostPaths(scratchDir('steward-trust-'));
  const repo = makeTufRepo({ releases: [{ app: 'web', version: '1.0.0' }, { app: 'api', version: '2.0.0' }] });
  assert.equal(await scheme(paths), 'keys');
  await assert.rejects(refreshTrust(paths, bundleOf(repo), Date.now()), refusal('TRUST_INVALID'));
  const set = await setTrustedRoot(paths, repo.files.get('1.root.json')!, Date.now());
  assert.deepEqual(set, { scheme: 'tuf', rootVersion: 1 });
  assert.equal(statSync(paths.trustDir).mode & 0o777, 0o700);
  const s = await refreshTrust(paths, bundleOf(repo), Date.now());
  assert.equal(s.timestampVersion, 1);
  assert.ok(s.timestampSignedAt && Math.abs(s.timestampSignedAt - Date.now()) < 5000);
  assert.equal(statSync(metadataDir(paths) + '/app.api.json').mode & 0o777, 0o600);
  const t = await storedTargets(paths, ['web/1.0.0/manifest.json', 'api/2.0.0/manifest.json', 'web/2.0.0/manifest.json']);
  assert.ok(t.get('web/1.0.0/manifest.json'));
  assert.ok(t.get('api/2.0.0/manifest.json'));
  assert.equal(t.get('web/2.0.0/manifest.json'), undefined);

  // An older root, and the same root again.
  await assert.rejects(setTrustedRoot(paths, Buffer.from('{}'), Date.now()), refusal('TRUST_INVALID'));
  assert.equal((await setTrustedRoot(paths, repo.files.get('1.root.json')!, Date.now())).timestampVersion, 1, 'the same root keeps the metadata');

  // A root rotation across two versions.
  let prev = repo.roots[0]!;
  for (let i = 0; i < 2; i++) {
    const next = rotateRoot(prev, { expires: Date.now() + 365 * DAY, snapshotKey: tufKeyOf((repo.keys.snapshot = newKey())) });
    repo.keys.root.forEach((k) => signMetadata(next, k));
    repo.put(`${next.signed.version}.root.json`, next);
    repo.roots.push(next);
    prev = next;
  }
  repo.publish();
  const after = await refreshTrust(paths, bundleOf(repo), Date.now());
  assert.deepEqual([after.rootVersion, after.timestampVersion], [3, 2]);
  await assert.rejects(setTrustedRoot(paths, repo.files.get('2.root.json')!, Date.now()), refusal('TRUST_ROLLBACK'));
  assert.equal((await readTrustState(paths, Date.now())).rootVersion, 3);
});

test('a swap a crash interrupted between its renames is put back; a store file another user could write is not trusted', async () => {
  const { renameSync, chmodSync } = await import('node:fs');
  const paths = hostPaths(scratchDir('steward-trust-'));
  const repo = makeTufRepo();
  await setTrustedRoot(paths, repo.files.get('1.root.json')!, Date.now());
  renameSync(metadataDir(paths), `${paths.trustDir}/metadata.old-crash`);
  assert.equal(await scheme(paths), 'tuf', 'the old folder is put back');
  chmodSync(`${metadataDir(paths)}/root.json`, 0o666);
  await assert.rejects(scheme(paths), refusal('TRUST_INVALID'));
  await assert.rejects(readTrustState(paths, Date.now()), /writable by group or others/);
});

test("a root file of the next version holding an older root is a rollback, one holding a later version is malformed", async () => {
  const paths = hostPaths(scratchDir('steward-trust-'));
  const repo = makeTufRepo();
  await setTrustedRoot(paths, repo.files.get('1.root.json')!, Date.now());
  await refreshTrust(paths, bundleOf(repo), Date.now());
  const replay = bundleOf(repo);
  replay.files['2.root.json'] = replay.files['1.root.json']!;
  await assert.rejects(refreshTrust(paths, replay, Date.now()), refusal('TRUST_ROLLBACK'));
  // Version 3 served as 2.root.json.
  const { rotate } = await import('../../helpers/tuf-host.js');
  rotate(repo);
  rotate(repo);
  const skip = bundleOf(repo, ['3.root.json']);
  skip.files = { '2.root.json': skip.files['3.root.json']!, ...bundleOf(repo, ['timestamp.json']).files };
  await assert.rejects(refreshTrust(paths, skip, Date.now()), refusal('TRUST_INVALID'));
  assert.equal((await readTrustState(paths, Date.now())).rootVersion, 1);
});
