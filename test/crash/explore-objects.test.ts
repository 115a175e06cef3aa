import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipTar, makeTar } from '../fixtures/tar-writer.js';
import { agentctl, makeReleaseKey, manifestFor, sri, startHelper, type TestHost } from '../helpers/host.js';
import { startObjectServer, type ObjectServer } from '../helpers/object-server.js';
import { explore, formatViolations } from './explorer.js';
import { APP, exploreHelperScenario, helperCheck } from './helper-scenario.js';
import { withoutTreeSyncfs } from './mutations.js';
import { killProcessesUnder } from './explorer.js';
import { crashSeed, mutationCap, requireStrace } from './settings.js';
import { hasZstd } from '../../src/core/compression.js';

// docs/design.md §20 under the crash explorer: an update staged from its file index and a pack of the
// files the host lacks (the pack's objects written and made durable, renamed into objects/, the
// tree linked from them, renamed into versions/, the marker), then activated and pruned (the
// objects no kept tree links collected). Every crash state recovers to a host with only complete
// objects and complete trees (test/crash/invariants.ts).

// 24 files of 4 KiB that do not compress, shared by the releases below.
const SHARED = Array.from({ length: 24 }, (_, i) => ({ path: `lib/m${i}.js`, content: randomBytes(3072).toString('base64') }));

function sharedRelease(version: string): Buffer {
  const release = { name: APP, version, start: { command: ['/bin/sleep', '3600'] }, health: { timeoutMs: 1000, stableMs: 30 } };
  return gzipTar(
    makeTar([
      { path: 'steward-release.json', content: JSON.stringify(release) + '\n' },
      { path: 'lib/', type: 'dir', mode: 0o755 },
      ...SHARED,
      { path: 'lib/app.txt', content: `web ${version}\n` },
      { path: 'bin/', type: 'dir', mode: 0o755 },
      { path: 'bin/run', content: '#!/bin/sh\n', mode: 0o755 },
    ]),
  );
}

// Traces `update web 3.0.0` from its signed index on a host where 2.0.0 is active (its files are
// objects there), from `srv`, and explores every crash state of it. `patch`: 2.0.0 published on
// `srv` too, as release add would have, so that 3.0.0 comes as a static patch from it.
async function exploreIndexedUpdate(t: TestContext, name: string, srv: ObjectServer, patch: boolean) {
  const manifestFile = (host: TestHost) => path.join(host.scratch, 'web-3.0.0.manifest.json');
  return exploreHelperScenario(t, name, {
    installed: ['1.0.0'],
    prepare: async (host) => {
      // 2.0.0, active: the files 3.0.0 shares are objects on the host.
      const tgz2 = sharedRelease('2.0.0');
      const file2 = path.join(host.scratch, 'web-2.0.0.tgz');
      writeFileSync(file2, tgz2);
      const helper = await startHelper(host);
      try {
        const r = await agentctl(host, ['update', APP, '2.0.0', '--file', file2, '--integrity', sri(tgz2), '--allow-unsigned', '--json']);
        assert.equal(r.json?.outcome, 'active', `${r.stdout} ${r.stderr}`);
      } finally {
        await helper.stop();
        await killProcessesUnder(host.root);
      }
      const key = makeReleaseKey(host, [APP]);
      if (patch) await srv.publish('2.0.0', tgz2);
      const tgz3 = sharedRelease('3.0.0');
      const index = await srv.publish('3.0.0', tgz3);
      const at = `${srv.base}/v1/artifacts/web/3.0.0`;
      writeFileSync(manifestFile(host), JSON.stringify(key.sign(manifestFor(APP, '3.0.0', tgz3, { url: `${at}.tgz`, index: { url: `${at}.index.json`, ...index } }))));
    },
    act: (h) => agentctl(h, ['update', APP, '3.0.0', '--manifest', manifestFile(h), '--attempt-id', 'crash-objects', '--json']),
    expect: (r) => {
      assert.equal(r?.json?.outcome, 'active', `the traced update: ${r?.stdout} ${r?.stderr}`);
      assert.equal((r?.json as { transfer?: { via?: string } }).transfer?.via, 'objects', 'the traced update staged from objects');
      if (patch) assert.match(JSON.stringify(r?.json), /"patch":\{"from":"2.0.0","used":true\}/, `the traced update took the patch: ${r?.stdout}`);
    },
  });
}

test('every crash state of an update staged from its file index and a pack recovers to complete objects and trees', async (t) => {
  if (!requireStrace(t)) return;
  const srv = await startObjectServer();
  t.after(() => srv.close());
  const { x, rec, before, work } = await exploreIndexedUpdate(t, 'update from a file index and a pack', srv, false);
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
  // The mutation: without its syncfs calls (the pack's objects before their rename into objects/,
  // the tree's before versions/), some state names bytes that never reached the disk.
  const m = await explore('update from objects without its syncfs', { snapshot: rec.snapshot, ops: withoutTreeSyncfs(rec.ops) }, work, helperCheck(before), { cap: mutationCap(), seed: crashSeed(), enough: 1 });
  assert.ok(m.violations.length > 0, 'the explorer finds no state broken by the missing syncfs');
  console.log(formatViolations(m, 1));
});

// The same update from a static zstd patch (docs/design.md §20.5): its objects are decoded from the
// patch with bases the host has, written and made durable as a pack's, then the same tree.
test('every crash state of an update staged from a static patch recovers to complete objects and trees', { skip: hasZstd() ? false : `this runtime (Node ${process.versions.node}) has no zstd: no patch is made or taken` }, async (t) => {
  if (!requireStrace(t)) return;
  const srv = await startObjectServer();
  srv.offerPatches = true;
  t.after(() => srv.close());
  const { x } = await exploreIndexedUpdate(t, 'update from a static patch', srv, true);
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});
