// The staging archive file is not fsynced (src/platform/hashing-writer.ts): instead the
// extraction hashes every byte it reads back and staging refuses a tree made from other bytes
// than the verified ones, and the archive is gone before the tree's syncfs (its bytes never
// reach disk). That file is only written for archives over ARCHIVE_IN_MEMORY_MAX_BYTES (and
// https fetches): these tests lower the bound to 0 to send their small archives through it.
// Archives within the bound are held in memory and written nowhere (the tests at the end).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { stagingDir, versionDir } from '../../../src/core/paths.js';
import { realStageIO } from '../../../src/helper/stage/real-stage-io.js';
import type { StageIO } from '../../../src/helper/stage/stage-io.js';
import { ARCHIVE_IN_MEMORY_MAX_BYTES } from '../../../src/helper/stage/stage-release.js';
import { assertStageRefused, hostWithCurrent, stageBytes, type StagedHost } from '../../helpers/stage-harness.js';
import { sri } from '../../helpers/host.js';
import { releaseTgz } from '../../fixtures/releases.js';

test('an archive whose bytes change on disk after they were verified is refused and nothing is staged', async () => {
  const tgz = releaseTgz('web', '2.0.0');
  // A valid release of the same app and version: only the hash can tell it apart.
  const other = releaseTgz('web', '2.0.0', { 'server.js': 'console.log("swapped")\n' });
  const err = await assertStageRefused(tgz, 'IO_ERROR', (s) => {
    // What a lost writeback would do: the copy verified `tgz`, the disk then holds `other`.
    s.deps.archiveInMemoryMaxBytes = 0;
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
  s.deps.archiveInMemoryMaxBytes = 0;
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
    // Two syncfs: the tree's bytes, then its links to objects (docs/design.md §20).
    assert.deepEqual(seen, [['tree'], ['tree']], 'the staging folder held more than the tree at syncfs');
    assert.equal(await fsp.readFile(path.join(versionDir(s.host.paths, 'web', '2.0.0'), 'server.js'), 'utf8'), 'ok\n');
  } finally {
    s.host.cleanup();
  }
});

// What each extraction was given and what the staging folder held as it began: real staging
// IO whose file paths fail the test if they are used.
function watchedIO(jobs: Array<{ source: 'memory' | 'file'; archive: Buffer | undefined; staging: string[] }>, allowFile: boolean): StageIO {
  const noFile = async (): Promise<never> => assert.fail('the archive went through a file');
  return {
    ...realStageIO,
    ...(allowFile ? {} : { copyLocalToFile: noFile, streamToFile: noFile }),
    prepareExtraction: () => {
      const p = realStageIO.prepareExtraction();
      return {
        extract: async (o) => {
          const staging = (await fsp.readdir(path.dirname(o.dest))).sort();
          jobs.push({ source: o.archive ? 'memory' : 'file', archive: o.archive, staging });
          return p.extract(o);
        },
        extractStream: (o) => p.extractStream(o),
        cancel: () => p.cancel(),
      };
    },
  };
}

async function withHost(t: import('node:test').TestContext): Promise<StagedHost> {
  const s = await hostWithCurrent();
  t.after(() => s.host.cleanup());
  return s;
}

test('a local file within the bound is extracted from memory: no archive.tgz is written, and the worker takes the Buffer', async (t) => {
  const s = await withHost(t);
  const jobs: Parameters<typeof watchedIO>[0] = [];
  s.deps.io = watchedIO(jobs, false);
  assert.equal(await stageBytes(s, releaseTgz('web', '2.0.0', { 'server.js': 'memory\n' })), null);
  assert.equal(jobs.length, 1);
  assert.equal(jobs[0]?.source, 'memory');
  assert.deepEqual(jobs[0]?.staging, [], 'the staging folder held an archive file');
  assert.equal(jobs[0]?.archive?.byteLength, 0, 'the Buffer was transferred to the worker (detached here)');
  assert.equal(await fsp.readFile(path.join(versionDir(s.host.paths, 'web', '2.0.0'), 'server.js'), 'utf8'), 'memory\n');
  assert.deepEqual(await fsp.readdir(stagingDir(s.host.paths, 'web')), []);
});

test('an upload within the bound is extracted from memory too', async (t) => {
  const s = await withHost(t);
  const jobs: Parameters<typeof watchedIO>[0] = [];
  s.deps.io = watchedIO(jobs, false);
  const tgz = releaseTgz('web', '2.0.0', { 'server.js': 'uploaded\n' });
  assert.equal(await stageBytes(s, tgz, { path: undefined, upload: { stream: Readable.from([tgz.subarray(0, 100), tgz.subarray(100)]), size: tgz.length } }), null);
  assert.deepEqual(jobs.map((j) => [j.source, j.staging]), [['memory', []]]);
  assert.equal(await fsp.readFile(path.join(versionDir(s.host.paths, 'web', '2.0.0'), 'server.js'), 'utf8'), 'uploaded\n');
});

test('an archive over the bound goes through archive.tgz; one exactly at the bound is held in memory', async (t) => {
  assert.equal(ARCHIVE_IN_MEMORY_MAX_BYTES, 128 * 1024 * 1024);
  const s = await withHost(t);
  const jobs: Parameters<typeof watchedIO>[0] = [];
  s.deps.io = watchedIO(jobs, true);
  const over = releaseTgz('web', '2.0.0');
  s.deps.archiveInMemoryMaxBytes = over.length - 1;
  assert.equal(await stageBytes(s, over), null);
  const at = releaseTgz('web', '2.0.1');
  s.deps.archiveInMemoryMaxBytes = at.length;
  assert.equal(await stageBytes(s, at, { version: '2.0.1' }), null);
  assert.deepEqual(jobs.map((j) => [j.source, j.staging]), [['file', ['archive.tgz']], ['memory', []]]);
});

test('within the bound, a short upload, an integrity mismatch and a hostile archive are refused as before and leave nothing', async () => {
  const tgz = releaseTgz('web', '2.0.0');
  const short = await assertStageRefused(tgz, 'FETCH_FAILED', { path: undefined, upload: { stream: Readable.from([tgz.subarray(0, 50)]), size: tgz.length } });
  assert.match(short.message, /the upload is shorter than its announced size \(50 of \d+ bytes\)/);
  const mismatch = await assertStageRefused(tgz, 'INTEGRITY_MISMATCH', { integrity: `sha512-${'A'.repeat(86)}==` });
  assert.match(mismatch.message, /does not match integrity/);
  // Not gzip: the in-memory path checks the magic as openArchive does for a file.
  const notGzip = Buffer.from('not a gzip file at all');
  const refused = await assertStageRefused(notGzip, 'UNSAFE_ARCHIVE');
  assert.match(refused.message, /not a gzip file/);
});
