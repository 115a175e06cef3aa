import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import { stagingDir } from '../../../src/core/paths.js';
import { verifyApp } from '../../../src/helper/ops/verify.js';
import { hostWithCurrent } from '../../helpers/stage-harness.js';
import { assertTreeAsTarballGives, stageIndexed, startObjectServer } from '../../helpers/object-server.js';
import { releaseOf } from '../../helpers/object-releases.js';
import { gzipTar, makeReleaseTar } from '../../fixtures/tar-writer.js';

// docs/design.md §20 "Fetching what is missing": two releases that share most files; the second is
// staged from its signed index and a pack of the files the host lacks, and its tree is the tree
// its tarball gives, byte for byte and mode for mode.

// The object server, the host that stages from objects, and a peer that stages the same tarball
// the old way (assertTreeAsTarballGives); all gone after the test.
async function serverAndTwoHosts(t: { after(fn: () => void): void }) {
  const srv = await startObjectServer();
  const s = await hostWithCurrent();
  const peer = await hostWithCurrent();
  t.after(() => {
    srv.close();
    s.host.cleanup();
    peer.host.cleanup();
  });
  return { srv, s, peer };
}

// Either way the tree's folders are made: 0555 at once (root, able to write in them), or 0700 and
// chmodded once the tree is whole (stage-from-index.ts).
for (const sealed of [false, true]) {
  const skip = sealed && process.getuid?.() !== 0 ? 'only root writes in a folder it made 0555' : false;
  test(`the second of two releases that share most files fetches only the difference, and its tree is the one its tarball gives (folders ${sealed ? '0555 from the start' : 'sealed at the end'})`, { skip }, async (t) => {
    const { srv, s, peer } = await serverAndTwoHosts(t);
    s.deps.sealFoldersAtMkdir = sealed;
    const v1 = releaseOf('1.0.0', 'console.log(1)\n');
    const v2 = releaseOf('1.1.0', `console.log(2, ${JSON.stringify(randomBytes(3000).toString('base64'))})\n`);
    // The first: nothing of it on the host, so more than half is missing: the tarball, as before.
    const first = await stageIndexed(s, srv, '1.0.0', v1);
    assert.equal(first.via, 'tarball');
    assert.equal(first.fallback?.code, null, 'a choice, not a failure');
    assert.match(first.fallback?.message ?? '', /more than half/);
    const before = { ...srv.moved };
    const second = await stageIndexed(s, srv, '1.1.0', v2);
    assert.equal(second.via, 'objects', JSON.stringify(second.fallback));
    assert.equal(srv.moved.tgz, before.tgz, 'the tarball of 1.1.0 was never fetched');
    const moved = srv.moved.index - before.index + (srv.moved.pack - before.pack);
    assert.equal(second.fetchedBytes, moved, 'fetchedBytes is what went over the wire');
    assert.ok(moved < v2.length / 2, `moved ${moved} of a ${v2.length}-byte tarball`);
    assert.ok((second.reusedBytes ?? 0) >= 40 * 4096, `reused ${second.reusedBytes}`);
    assert.ok(srv.requests.some((r) => r.startsWith('POST /v1/artifacts/web/1.1.0.pack')));

    // The same tarball staged the old way on another host: the same walk and the same digest.
    await assertTreeAsTarballGives(s, second, peer, '1.1.0', v2);
    assert.deepEqual(readdirSync(stagingDir(s.host.paths, 'web')), []);
    assert.deepEqual((await verifyApp(s.host.paths, 'web')).problems, []);
  });
}

test('a third release with nothing new fetches the index and no pack', async (t) => {
  const srv = await startObjectServer();
  const s = await hostWithCurrent();
  t.after(() => {
    srv.close();
    s.host.cleanup();
  });
  await stageIndexed(s, srv, '1.0.0', releaseOf('1.0.0', 'x\n'));
  // Only steward-release.json differs (it names the version): a pack of one small object.
  const r = await stageIndexed(s, srv, '1.0.1', releaseOf('1.0.1', 'x\n'));
  assert.equal(r.via, 'objects');
  assert.ok((r.fetchedBytes ?? Infinity) < 30_000, `fetched ${r.fetchedBytes}`);
});

// One content under two modes is two objects (the mode is in the name): a pack brings the bytes
// once, in the first file's mode, and the stage makes the other; bytes the host has only in the
// other mode are copied into a new object of this one. Either way the tree is the tarball's.
test('the same bytes as a plain file and an executable, new or held only in the other mode, stage as the tarball gives them', async (t) => {
  const { srv, s, peer } = await serverAndTwoHosts(t);
  const shared = Array.from({ length: 40 }, (_, i) => ({ path: `lib/m${i}.js`, content: randomBytes(4096).toString('base64') }));
  const held = randomBytes(2048).toString('base64');
  const fresh = randomBytes(2048).toString('base64');
  const v1 = gzipTar(makeReleaseTar('web', '1.0.0', [{ path: 'lib/', type: 'dir' }, ...shared, { path: 'held.txt', content: held, mode: 0o644 }]));
  const v2 = gzipTar(
    makeReleaseTar('web', '1.1.0', [
      { path: 'bin/', type: 'dir' },
      // Only as an executable now: the host has these bytes as a plain object.
      { path: 'bin/held', content: held, mode: 0o755 },
      // New bytes under both modes.
      { path: 'bin/fresh', content: fresh, mode: 0o755 },
      { path: 'fresh.txt', content: fresh, mode: 0o644 },
      { path: 'lib/', type: 'dir' },
      ...shared,
    ]),
  );
  await stageIndexed(s, srv, '1.0.0', v1);
  const r = await stageIndexed(s, srv, '1.1.0', v2);
  assert.equal(r.via, 'objects', JSON.stringify(r.fallback));
  await assertTreeAsTarballGives(s, r, peer, '1.1.0', v2);
  assert.deepEqual((await verifyApp(s.host.paths, 'web')).problems, []);
});

// Past STAT_AHEAD_MIN objects, their lstats are made on a worker thread ahead of the links
// (platform/stat-ahead.ts): each link must be checked by its own object's lstat, also where many
// files share one object (linked once checked) and the same bytes are an object in each mode.
test('a tree of hundreds of objects, many under several names and in both modes, stages from objects as its tarball gives it', async (t) => {
  const { srv, s, peer } = await serverAndTwoHosts(t);
  const bodies = Array.from({ length: 400 }, (_, i) => `module.exports = ${i}; // ${randomBytes(2048).toString('base64')}\n`);
  const big = (version: string, changed: string) =>
    gzipTar(
      makeReleaseTar('web', version, [
        { path: 'server.js', content: changed, mode: 0o644 },
        { path: 'a/', type: 'dir' },
        { path: 'b/', type: 'dir' },
        ...bodies.map((content, i) => ({ path: `a/m${i}.js`, content, mode: 0o644 })),
        // The same bytes again: under other names, and executable.
        ...bodies.slice(0, 150).map((content, i) => ({ path: `b/copy${i}.js`, content, mode: 0o644 })),
        ...bodies.slice(100, 200).map((content, i) => ({ path: `b/run${i}`, content, mode: 0o755 })),
      ]),
    );
  const v1 = big('1.0.0', 'console.log(1)\n');
  const v2 = big('1.1.0', `console.log(2, ${JSON.stringify(randomBytes(3000).toString('base64'))})\n`);
  assert.equal((await stageIndexed(s, srv, '1.0.0', v1)).via, 'tarball');
  const second = await stageIndexed(s, srv, '1.1.0', v2);
  assert.equal(second.via, 'objects', JSON.stringify(second.fallback));
  await assertTreeAsTarballGives(s, second, peer, '1.1.0', v2);
  assert.deepEqual((await verifyApp(s.host.paths, 'web')).problems, []);
});
