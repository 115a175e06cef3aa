// A pax global header ('g') applies to every entry after it. GNU tar applies its path (every
// entry then has that one name), node-tar drops it; node-tar lets its size, mtime or atime
// override each entry's own, GNU tar the other way round. Either way the two extract different
// trees: refused, named by the header. What steward never applies (a comment) is accepted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expectExtracts, expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('a global pax header carrying a path is refused, named by the header', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('pax-global-header-path').build(), /entry "pax_global_header": global pax header sets "path" for every entry after it \("pwned\.txt"\)/);
});

for (const [key, value] of [['linkpath', 'server.js'], ['size', '3'], ['mtime', '1700000000'], ['atime', '1700000000']] as Array<[string, string]>) {
  test(`a global pax header carrying ${key} is refused, named by the header`, async (t) => {
    const sb = await makeSandbox();
    t.after(() => removeSandbox(sb));
    const tar = makeReleaseTar('web', '1.0.0', [{ path: 'pax_global_header', type: 'gpax', pax: { [key]: value } }, { path: 'a.txt', content: 'abc' }]);
    await expectRefused(sb, gzipTar(tar), new RegExp(`entry "pax_global_header": global pax header sets "${key}"`));
  });
}

test('a global pax header with only a comment (as git archive writes it) is accepted', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'pax_global_header', type: 'gpax', pax: { comment: 'a'.repeat(40) } }, { path: 'a.txt', content: 'abc' }]);
  const r = await expectExtracts(sb, gzipTar(tar));
  assert.equal(r.entries, 2);
});
