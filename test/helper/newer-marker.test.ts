import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { versionDir } from '../../src/core/paths.js';
import { cleanStaleStaging } from '../../src/helper/start-cleanup.js';
import { inspectMarker } from '../../src/helper/release-store.js';
import { hostWithCurrent, stageBytes } from '../helpers/stage-harness.js';
import { releaseTgz } from '../fixtures/releases.js';

// docs/design.md §10: an older steward may read a newer steward's files after a rollback of
// steward itself. A release tree whose marker is newer is neither used nor removed.
test('a tree staged by a newer steward is left alone by the start cleanup and by staging', async () => {
  const s = await hostWithCurrent();
  try {
    const dir = versionDir(s.host.paths, 'web', '3.0.0');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'steward-release.json'), '{}');
    writeFileSync(path.join(dir, '.steward-valid'), JSON.stringify({ schemaVersion: 2, somethingNew: true }));
    chmodSync(dir, 0o555);
    const broken = versionDir(s.host.paths, 'web', '4.0.0');
    mkdirSync(broken, { recursive: true });

    const removed = await cleanStaleStaging(s.host.paths, 'web');
    assert.deepEqual(removed, ['4.0.0'], 'only the tree without any marker is removed');
    assert.deepEqual(await inspectMarker(s.host.paths, 'web', '3.0.0'), { state: 'newer', schemaVersion: 2 });

    const err = await stageBytes(s, releaseTgz('web', '3.0.0'), { version: '3.0.0' });
    assert.equal(err?.code, 'RELEASE_INVALID');
    assert.match(err?.message ?? '', /newer steward/);
    assert.equal((await inspectMarker(s.host.paths, 'web', '3.0.0')).state, 'newer', 'staging did not replace it');
  } finally {
    s.host.cleanup();
  }
});
