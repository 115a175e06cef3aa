import assert from 'node:assert/strict';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { expectExtracts, expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('shared-library symlink chains and a folder symlink inside the tree extract', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [
    // The links come before their targets, as tar may order them.
    { path: 'lib/libfoo.so', type: 'symlink', linkpath: 'libfoo.so.1' },
    { path: 'lib/libfoo.so.1', type: 'symlink', linkpath: 'libfoo.so.1.2' },
    { path: 'lib/libfoo.so.1.2', content: 'ELF' },
    { path: 'current-lib', type: 'symlink', linkpath: 'lib' },
    { path: 'bin/tool', type: 'symlink', linkpath: '../current-lib/libfoo.so' },
    { path: 'nested/deep/link', type: 'symlink', linkpath: '../../lib/libfoo.so.1.2' },
  ]);
  await expectExtracts(sb, gzipTar(tar));
  assert.equal(await fsp.readFile(path.join(sb.dest, 'lib/libfoo.so'), 'utf8'), 'ELF');
  assert.equal(await fsp.readFile(path.join(sb.dest, 'bin/tool'), 'utf8'), 'ELF');
  assert.equal(await fsp.readlink(path.join(sb.dest, 'current-lib')), 'lib');
  assert.equal(await fsp.readFile(path.join(sb.dest, 'nested/deep/link'), 'utf8'), 'ELF');
});

test('a file written below a deferred folder symlink is still refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [
    { path: 'out', type: 'symlink', linkpath: 'lib' },
    { path: 'lib/', type: 'dir' },
    { path: 'out/x', content: 'through the link' },
  ]);
  await expectRefused(sb, gzipTar(tar), /written through the symlink "out"/);
});
