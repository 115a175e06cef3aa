// Staging end to end (fetch or local file, integrity, extraction, checks, commit) for archives
// other tools wrote: a node_modules tree tarred with plain `tar czf`, where esbuild's install
// hard-linked its binary, stages; and every refused stage is logged with the app, version,
// code and the entry, as an operator reading the helper's journal needs it.
import assert from 'node:assert/strict';
import createDebug from 'debug';
import { execFileSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { format } from 'node:util';
import { versionDir } from '../../../src/core/paths.js';
import { hostileArchive } from '../../fixtures/hostile-archives.js';
import { hostWithCurrent, stageBytes } from '../../helpers/stage-harness.js';

async function nodeModulesTgz(dir: string): Promise<Buffer> {
  const src = path.join(dir, 'src');
  const bin = path.join(src, 'node_modules/@esbuild/linux-x64/bin');
  await fsp.mkdir(bin, { recursive: true });
  await fsp.mkdir(path.join(src, 'node_modules/esbuild/bin'), { recursive: true });
  await fsp.writeFile(path.join(src, 'steward-release.json'), JSON.stringify({ name: 'web', version: '2.0.0', start: { command: ['node', 'server.js'] } }));
  await fsp.writeFile(path.join(src, 'server.js'), 'console.log(1)\n');
  await fsp.writeFile(path.join(bin, 'esbuild'), '#!/bin/sh\necho esbuild\n', { mode: 0o755 });
  await fsp.link(path.join(bin, 'esbuild'), path.join(src, 'node_modules/esbuild/bin/esbuild'));
  const tgz = path.join(dir, 'app.tgz');
  execFileSync('tar', ['czf', tgz, '-C', src, '.']);
  return fsp.readFile(tgz);
}

for (const via of ['file', 'fetch'] as const) {
  test(`a node_modules tree tarred with plain tar czf, its esbuild binary hard-linked, stages (${via})`, async () => {
    const s = await hostWithCurrent();
    try {
      const tgz = await nodeModulesTgz(s.host.scratch);
      const err = await stageBytes(s, tgz, { version: '2.0.0' }, via);
      assert.equal(err, null, err?.message);
      const tree = versionDir(s.host.paths, 'web', '2.0.0');
      const a = await fsp.lstat(path.join(tree, 'node_modules/@esbuild/linux-x64/bin/esbuild'));
      const b = await fsp.lstat(path.join(tree, 'node_modules/esbuild/bin/esbuild'));
      assert.equal(a.ino, b.ino);
      assert.equal(a.mode & 0o7777, 0o555);
      // Its two names in the tree and its object's (docs/design.md §20).
      assert.equal(a.nlink, 3);
    } finally {
      s.host.cleanup();
    }
  });
}

test('a refused stage is logged with its app, version, attempt, code and entry', async () => {
  const lines: string[] = [];
  const logNow = createDebug.log;
  const wasEnabled = createDebug.disable();
  createDebug.enable('steward:helper:stage');
  createDebug.log = (...a: unknown[]) => void lines.push(format(...(a as [string, ...unknown[]])));
  const s = await hostWithCurrent();
  try {
    const err = await stageBytes(s, hostileArchive('pax-path-with-newline').build(), { version: '1.0.0', attemptId: 'a-test-1' });
    assert.equal(err?.code, 'UNSAFE_ARCHIVE');
    const line = lines.find((l) => l.includes('stage refused'));
    assert.ok(line, `no refusal logged in ${JSON.stringify(lines)}`);
    assert.match(line, /stage refused app=web version=1\.0\.0 attempt=a-test-1 code=UNSAFE_ARCHIVE entry="short\.txt": unsafe archive: entry "short\.txt": its pax record "path" holds a newline/);
  } finally {
    createDebug.log = logNow;
    createDebug.enable(wasEnabled);
    s.host.cleanup();
  }
});
