import { promises as fsp } from 'node:fs';
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('an absolute entry path is refused and the absolute target is never created', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const target = path.join(sb.outside, 'pwned-absolute.txt');
  await expectRefused(sb, hostileArchive('absolute-path').build({ outside: sb.outside }), /entry "\/.*pwned-absolute\.txt": path is absolute/);
  await assert.rejects(fsp.lstat(target), { code: 'ENOENT' });
  // node-tar would strip the leading '/' and write the file inside dest: it is not there either.
  await assert.rejects(fsp.lstat(path.join(sb.dest, target)), { code: 'ENOENT' });
});

test('an absolute folder entry is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: path.join(sb.outside, 'new-folder') + '/', type: 'dir' }]);
  await expectRefused(sb, gzipTar(tar), /path is absolute/);
});
