// docs/design.md §20.2: a backup carries each kept tarball and each release's indexed manifest, not the
// file index and objects beside the tarball; `restore` makes them again from the tarball it
// placed, so the restored control plane serves the index its indexed manifests sign.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { controlCli } from '../helpers/fleet.js';
import { testBackupKey } from '../helpers/backup-file.js';
import { releaseOf } from '../helpers/object-releases.js';

test('restore makes the file index and objects of each indexed release again beside its tarball', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-restore-index-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const db = path.join(dir, 'old.db');
  const artifacts = path.join(dir, 'old-artifacts');
  const ctl = async (d: string, a: string, ...args: string[]) => {
    const r = await controlCli(d, ['--artifacts', a, ...args, '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    return r;
  };
  await ctl(db, artifacts, 'init');
  const keys = (await ctl(db, artifacts, 'keys', 'create', '--out', path.join(dir, 'keys'))).json;
  const file = path.join(dir, 'web-1.0.0.tgz');
  writeFileSync(file, releaseOf('1.0.0', 'one\n'));
  const added = (await ctl(db, artifacts, 'release', 'add', 'web', '1.0.0', '--file', file, '--base-url', 'https://cp.example', '--key', keys.privateKeyFile)).json;
  assert.ok(added.indexedManifest);
  const plain = path.join(dir, 'web-1.1.0.tgz');
  writeFileSync(plain, releaseOf('1.1.0', 'two\n'));
  await ctl(db, artifacts, 'release', 'add', 'web', '1.1.0', '--file', plain, '--base-url', 'https://cp.example', '--key', keys.privateKeyFile, '--no-index');
  const backup = path.join(dir, 'control.backup');
  await ctl(db, artifacts, 'backup', '--key', testBackupKey().key, '--out', backup);

  const target = path.join(dir, 'new.db');
  const restoredArtifacts = path.join(dir, 'new-artifacts');
  const restored = await ctl(target, restoredArtifacts, 'restore', '--key', testBackupKey().pub, '--from', backup);
  assert.match(restored.stderr, /file index web 1\.0\.0: made again from its tarball/);
  assert.ok(existsSync(path.join(restoredArtifacts, 'web', '1.0.0.index.json')), 'the index of the indexed release');
  assert.equal(existsSync(path.join(restoredArtifacts, 'web', '1.1.0.index.json')), false, 'none for the release without one');
  assert.deepEqual(readdirSync(path.join(restoredArtifacts, 'web', 'objects')).sort(), readdirSync(path.join(artifacts, 'web', 'objects')).sort());
  const listed = (await ctl(target, restoredArtifacts, 'release', 'list', 'web')).json.releases;
  assert.deepEqual(listed.map((r: { version: string; indexedManifest: unknown }) => [r.version, r.indexedManifest !== null]), [['1.0.0', true], ['1.1.0', false]]);
});
