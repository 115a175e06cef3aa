// normalizeEntryPath (src/platform/tar-entry-rules.ts) returns a path that needs no normalizing
// as it is, without path.posix.normalize: the shortcut must give what the full form gives, for
// every path an archive could hold. Paths are drawn from the characters that matter to the
// normalizing ('.', '/') among others, so '.', '..', '...', '//', './', trailing '/' and their
// mixes all come up.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { normalizeEntryPath } from '../../src/platform/tar-entry-rules.js';
import { checkProperty } from './property-run.js';

// The full form, as it was before the shortcut.
function normalizedInFull(p: string): string {
  const n = path.posix.normalize(p.replace(/^(\.\/+)+/, ''));
  const trimmed = n.replace(/\/+$/, '');
  return trimmed === '.' ? '' : trimmed;
}

const entryPath = fc.array(fc.constantFrom('.', '/', 'a', 'b', '..', './', '//', '\\', ' '), { maxLength: 12 }).map((parts) => parts.join(''));

test('an entry path is normalized the same with the shortcut as in full', async () => {
  await checkProperty('entry path normalizing', fc.property(entryPath, (p) => assert.equal(normalizeEntryPath(p), normalizedInFull(p), JSON.stringify(p))), 5000);
  for (const p of ['', '.', './', '..', '...', 'a/.b', 'a/..b', 'a/b/', '/a', '/', 'a//b', './a', '././a', 'a/./b', 'a/b/..']) {
    assert.equal(normalizeEntryPath(p), normalizedInFull(p), JSON.stringify(p));
  }
});
