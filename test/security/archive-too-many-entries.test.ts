import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive, manyFiles } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('one entry more than maxEntries is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', manyFiles(10)); // 11 entries
  await expectRefused(sb, gzipTar(tar), /entry "f0\/9": the archive holds more than 10 entries/, { maxEntries: 10 });
});

test('exactly maxEntries entries are accepted', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const { extractArchive } = await import('../../src/platform/tarball.js');
  const { writeFile } = await import('node:fs/promises');
  const { DEFAULT_LIMITS } = await import('../fixtures/extract-sandbox.js');
  await writeFile(sb.archive, gzipTar(makeReleaseTar('web', '1.0.0', manyFiles(9))));
  const r = await extractArchive({ archivePath: sb.archive, dest: sb.dest, limits: { ...DEFAULT_LIMITS, maxEntries: 10 } });
  assert.equal(r.entries, 11); // 10 files and the implicit folder f0
});

// 100,000 files are written before the 100,001st is refused: half a minute on /dev/shm, two on
// this machine's disk (GNU tar is not much faster at creating them), so it runs in CI and when
// asked for.
const slow =
  process.env.CI === 'true' || process.env.STEWARD_SLOW_TESTS === '1' ? {} : { skip: 'runs in CI or with STEWARD_SLOW_TESTS=1 (writes 100,000 files)' };

test('100,001 entries are refused under the default limit of 100,000', slow, async (t) => {
  const sb = await makeSandbox({ inMemory: true });
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('too-many-entries').build(), /the archive holds more than 100000 entries/);
});
