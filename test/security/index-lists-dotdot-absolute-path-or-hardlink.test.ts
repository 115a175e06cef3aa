import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { indexPath } from '../../src/control/catalog/file-index-of.js';
import { StewardError } from '../../src/core/errors.js';
import { stageRelease } from '../../src/helper/stage/stage-release.js';
import { indexedManifest, sha256 } from '../helpers/object-server.js';
import { assertNothingUntrusted, objectAttackHost, objectNames } from '../helpers/object-attacks.js';
import { releaseOf } from '../helpers/object-releases.js';
import { sri } from '../helpers/host.js';

// docs/design.md §20: a file index, even one the release key signed, is held to the extraction's
// rules (§3.4): no `..`, no absolute path, no hardlink (nor any type but file, folder, symlink),
// no symlink out of the tree. Refused UNSAFE_ARCHIVE before any object is fetched or linked.
const SHA = sha256(Buffer.from('x'));
const file = (p: string) => ({ mode: 0o444, path: p, sha256: SHA, size: 1, type: 'file' });
const cases: Array<[string, unknown[], RegExp]> = [
  ['a path with ..', [file('steward-release.json'), file('../etc/passwd')], /"\.\." component/],
  ['an absolute path', [file('steward-release.json'), file('/etc/passwd')], /absolute path/],
  ['a hardlink', [file('steward-release.json'), { linkpath: 'steward-release.json', mode: 0o444, path: 'h', size: 0, type: 'hardlink' }], /only files, folders and symlinks/],
  ['a symlink out of the tree', [file('steward-release.json'), { mode: 0o777, path: 'out', size: 5, target: '../..', type: 'symlink' }], /outside the tree/],
  ['a file below a file', [file('steward-release.json'), file('steward-release.json/x')], /no folder/],
];

for (const [what, entries, message] of cases) {
  test(`a signed index listing ${what} is refused UNSAFE_ARCHIVE and nothing is kept`, async (t) => {
    const { s, srv, cleanup } = await objectAttackHost();
    t.after(cleanup);
    const tgz = releaseOf('2.0.0', 'two\n');
    await srv.publish('2.0.0', tgz);
    const index = Buffer.from(JSON.stringify({ entries, v: 1 }));
    writeFileSync(indexPath(srv.artifactsDir, 'web', '2.0.0'), index);
    const before = await objectNames(s);
    const manifest = indexedManifest(s, srv, '2.0.0', tgz, { integrity: sri(index), size: index.length });
    const err = await stageRelease(s.deps, { kind: 'helper', app: 'web', version: '2.0.0', manifest }).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof StewardError, String(err));
    assert.equal(err.code, 'UNSAFE_ARCHIVE');
    assert.match(err.message, message);
    assert.ok(!srv.requests.some((r) => r.includes('.pack') || r.includes('.tgz')), 'nothing was fetched after the index');
    assert.deepEqual(await objectNames(s), before, 'objects/ is unchanged');
    await assertNothingUntrusted(s, '2.0.0');
  });
}
