import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { openSqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';
import { generateKeyPair } from '../../src/platform/keys.js';
import { releaseTgz } from '../fixtures/releases.js';

// The attack: the release tarballs `steward-control release add` keeps beside its database
// (`<db>.artifacts/<app>/<version>.tgz`) made 0755/0644: any account on the machine reads every
// release, unpublished ones included. They are 0700 folders and 0600 files, whatever the umask.

test('release add keeps its tarball in 0700 folders as a 0600 file, even under umask 000', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-control-artifacts-'));
  const old = process.umask(0o000);
  const store = openSqliteStore(path.join(dir, 'control.db'), { create: true });
  try {
    const file = path.join(dir, 'web-1.0.0.tgz');
    writeFileSync(file, releaseTgz('web', '1.0.0'));
    const added = await addRelease(store, { app: 'web', version: '1.0.0', file, url: null, baseUrl: 'https://cp.example', privateKeyPem: generateKeyPair().privatePem, expiresDays: 30, artifactsDir: artifactsDirOf(store.file) });
    const kept = added.artifactPath as string;
    const mode = (p: string) => statSync(p).mode & 0o777;
    assert.deepEqual([artifactsDirOf(store.file), path.dirname(kept), kept].map(mode), [0o700, 0o700, 0o600]);
  } finally {
    await store.close();
    process.umask(old);
    rmSync(dir, { recursive: true, force: true });
  }
});
