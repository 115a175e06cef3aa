import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { versionDir, versionsDir } from '../../src/core/paths.js';
import { readMarker } from '../../src/helper/release-store.js';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { gzipTar, makeReleaseTar, type TarEntrySpec } from '../fixtures/tar-writer.js';
import { useHost } from '../helpers/host-fixture.js';
import { processApp } from '../helpers/host.js';
import { hostWithCurrent, stageBytes } from '../helpers/stage-harness.js';
import { assertNothingStaged, receiptOf, signedHost, updateOverHelperSock } from '../helpers/helper-sock-attempts.js';

// Issue 15 item 6: a folder named `.steward-valid` in an archive used to reach versions/<ver>/,
// where steward's marker could not be written over it and the marker-first removal failed on it
// (unlink of a folder): every later stage of that version failed, and so did the helper's start
// cleanup, across restarts. Now such an entry is refused as its header is read, and a tree
// without a valid marker is removable whatever its shape: a folder (read-only, with content) in
// the marker's place, read-only folders all the way down, paths longer than PATH_MAX, symlinks
// out of the tree (never followed), as root and as the helper's own user.

async function extractIn(extra: TarEntrySpec[], pattern: RegExp): Promise<void> {
  const sb = await makeSandbox();
  try {
    await expectRefused(sb, gzipTar(makeReleaseTar('web', '1.0.0', extra)), pattern);
  } finally {
    await removeSandbox(sb);
  }
}

test('a .steward-valid folder, or a file below one, is refused as its header is read', async () => {
  const rule = /\.steward-valid is the name of steward's marker; no archive may hold it/;
  await extractIn([{ path: '.steward-valid/', type: 'dir' }], rule);
  await extractIn([{ path: '.steward-valid/marker.json', content: '{}' }], rule);
  await extractIn([{ path: './.steward-valid/deep/er/x', content: 'x' }], rule);
});

test('an update over helper.sock of a signed release holding a .steward-valid folder ends in a refused receipt (UNSAFE_ARCHIVE) and leaves nothing staged', { timeout: 60_000 }, async (t) => {
  const s = await signedHost(t);
  const attemptId = 'rollout-5.web.1';
  const tgz = gzipTar(makeReleaseTar('web', '1.0.0', [{ path: '.steward-valid/', type: 'dir' }, { path: '.steward-valid/x', content: 'x' }]));
  const r = await updateOverHelperSock(s, 'web', '1.0.0', tgz, attemptId);
  assert.equal(r.code, 3, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'UNSAFE_ARCHIVE', r.json.error.message);
  const receipt = await receiptOf(s, attemptId);
  assert.equal(receipt.outcome, 'refused');
  assert.equal(receipt.reason.code, 'UNSAFE_ARCHIVE');
  assertNothingStaged(s, 'web', '1.0.0');
});

// A tree as an older steward could have left at `dir` from such an archive: read-only folders
// (0555) and files (0444), a `.steward-valid` folder with content, 64 nested folders, a part
// whose paths are longer than PATH_MAX, and symlinks out of the tree to `outside`.
function plantPoisonedTree(dir: string, outside: string): void {
  mkdirSync(path.join(dir, '.steward-valid', 'inner'), { recursive: true });
  writeFileSync(path.join(dir, '.steward-valid', 'inner', 'marker.json'), '{}');
  symlinkSync(path.join(outside, 'victim.txt'), path.join(dir, '.steward-valid', 'victim'));
  symlinkSync(outside, path.join(dir, 'out'));
  writeFileSync(path.join(dir, 'steward-release.json'), '{}');
  let deep = path.join(dir, 'deep');
  for (let i = 0; i < 64; i++) deep = path.join(deep, 'd');
  mkdirSync(deep, { recursive: true });
  writeFileSync(path.join(deep, 'leaf.txt'), 'leaf');
  // Two chains of ~3,000 bytes, each made under a short path, then one renamed into the other:
  // paths of ~6,000 bytes no call could have made directly.
  const chain = (top: string): string => {
    let p = top;
    for (let i = 0; i < 15; i++) p = path.join(p, 'c'.repeat(200));
    mkdirSync(p, { recursive: true });
    writeFileSync(path.join(p, 'end.txt'), 'end');
    return p;
  };
  const a = chain(path.join(dir, 'a'));
  chain(path.join(dir, 'b'));
  renameSync(path.join(dir, 'b'), path.join(a, 'b'));
  // Read-only, deepest first: what the tree walk leaves, and what the marker folder would be.
  // (-execdir: find walks by file descriptor, so it reaches paths longer than PATH_MAX.)
  execFileSync('find', [dir, '-depth', '(', '-type', 'f', '-execdir', 'chmod', '0444', '{}', '+', ')', '-o', '(', '-type', 'd', '-execdir', 'chmod', '0555', '{}', '+', ')']);
}

function outsideFolder(base: string): string {
  const outside = path.join(base, 'outside');
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(outside, 'victim.txt'), 'victim\n');
  return outside;
}

test('trees left with a .steward-valid folder are removed by the next start; nothing outside them is touched', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, { apps: { web: processApp() } });
  const outside = outsideFolder(host.scratch);
  mkdirSync(versionsDir(host.paths, 'web'), { recursive: true });
  plantPoisonedTree(versionDir(host.paths, 'web', '2.0.0'), outside);
  plantPoisonedTree(versionDir(host.paths, 'web', '3.0.0'), outside);
  const helper = await host.startHelper();
  await helper.stop();
  assert.equal(existsSync(versionDir(host.paths, 'web', '2.0.0')), false, 'the start removed versions/2.0.0');
  assert.equal(existsSync(versionDir(host.paths, 'web', '3.0.0')), false, 'and versions/3.0.0');
  assert.equal(readFileSync(path.join(outside, 'victim.txt'), 'utf8'), 'victim\n', 'a symlink out was never followed');
});

test('a stage of a version whose tree was left in that shape replaces it (the marker-first removal)', async (t) => {
  const s = await hostWithCurrent();
  t.after(() => s.host.cleanup());
  const outside = outsideFolder(s.host.scratch);
  plantPoisonedTree(versionDir(s.host.paths, 'web', '2.0.0'), outside);
  for (const attempt of [1, 2]) {
    const err = await stageBytes(s, gzipTar(makeReleaseTar('web', '2.0.0', [{ path: 'server.js', content: `${attempt}` }])));
    assert.equal(err, null, `stage ${attempt}: ${err?.message}`);
    assert.ok(await readMarker(s.host.paths, 'web', '2.0.0'), 'versions/2.0.0 is staged with its marker');
  }
  assert.equal(readFileSync(path.join(outside, 'victim.txt'), 'utf8'), 'victim\n');
});

test('as the helper own unprivileged user, the marker-first removal takes such a tree out too', async (t) => {
  const host = useHost(t, { apps: { web: processApp() } });
  const outside = outsideFolder(host.scratch);
  const dir = versionDir(host.paths, 'web', '2.0.0');
  mkdirSync(versionsDir(host.paths, 'web'), { recursive: true });
  plantPoisonedTree(dir, outside);
  const compiled = (rel: string) => JSON.stringify(fileURLToPath(new URL(`../../src/${rel}`, import.meta.url)));
  const script = `import { removeRelease } from ${compiled('helper/release-store.js')};
import { hostPaths } from ${compiled('core/paths.js')};
await removeRelease(hostPaths(${JSON.stringify(host.root)}), 'web', '2.0.0');`;
  const asRoot = process.getuid?.() === 0;
  // As root, the tree and its versions/ folder are given to nobody (65534), who removes it.
  if (asRoot) execFileSync('chown', ['-R', '-h', '65534:65534', versionsDir(host.paths, 'web')]);
  execFileSync(process.execPath, ['--input-type=module', '-e', script], { stdio: 'pipe', ...(asRoot ? { uid: 65534, gid: 65534 } : {}) });
  assert.equal(existsSync(dir), false, 'versions/2.0.0 is gone');
  assert.equal(readFileSync(path.join(outside, 'victim.txt'), 'utf8'), 'victim\n');
});
