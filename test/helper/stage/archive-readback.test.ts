// The staging archive is not fsynced (src/platform/hashing-writer.ts): instead the extraction
// hashes every byte it reads back and staging refuses a tree made from other bytes than the
// verified ones, and the archive is gone before the tree's syncfs (its bytes never reach disk).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { versionDir } from '../../../src/core/paths.js';
import { realStageIO } from '../../../src/helper/stage/real-stage-io.js';
import { assertStageRefused, hostWithCurrent, stageBytes } from '../../helpers/stage-harness.js';
import { sri } from '../../helpers/host.js';
import { releaseTgz } from '../../fixtures/releases.js';

test('an archive whose bytes change on disk after they were verified is refused and nothing is staged', async () => {
  const tgz = releaseTgz('web', '2.0.0');
  // A valid release of the same app and version: only the hash can tell it apart.
  const other = releaseTgz('web', '2.0.0', { 'server.js': 'console.log("swapped")\n' });
  const err = await assertStageRefused(tgz, 'IO_ERROR', (s) => {
    // What a lost writeback would do: the copy verified `tgz`, the disk then holds `other`.
    s.deps.io = {
      ...realStageIO,
      copyLocalToFile: async (o) => {
        const got = await realStageIO.copyLocalToFile(o);
        await fsp.writeFile(o.destFile, other);
        return got;
      },
    };
    return {};
  });
  assert.match(err.message, /not the one verified/);
  // No digest of bytes the caller did not send.
  assert.ok(!err.message.includes(sri(other).slice(7, 30)));
});

test('the archive is removed before the tree is made durable, and the staged tree is complete', async () => {
  const s = await hostWithCurrent();
  try {
    const seen: string[][] = [];
    s.deps.io = {
      ...realStageIO,
      syncFileSystem: async (dir) => {
        seen.push((await fsp.readdir(path.dirname(dir))).sort());
        return realStageIO.syncFileSystem(dir);
      },
    };
    const err = await stageBytes(s, releaseTgz('web', '2.0.0', { 'server.js': 'ok\n' }));
    assert.equal(err, null);
    assert.deepEqual(seen, [['tree']], 'the staging folder held more than the tree at syncfs');
    assert.equal(await fsp.readFile(path.join(versionDir(s.host.paths, 'web', '2.0.0'), 'server.js'), 'utf8'), 'ok\n');
  } finally {
    s.host.cleanup();
  }
});
