import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { packHeader } from '../../src/core/object-pack.js';
import { stageIndexed } from '../helpers/object-server.js';
import { assertNothingUntrusted, objectAttackHost, objectNames } from '../helpers/object-attacks.js';
import { releaseOf } from '../helpers/object-releases.js';

// docs/design.md §20: a pack is exactly the objects asked, in order, each of its indexed size. A pack
// of other objects (well formed, each matching its own header), a short one and a long one are
// refused (INTEGRITY_MISMATCH), nothing of them kept, and the tarball staged. The pack travels
// gzip-compressed; one that inflates past what was asked is refused at the first byte too many.
const EVIL = Buffer.from('evil bytes\n');
const cases: Array<[string, (body: Buffer) => Buffer, string]> = [
  ['other objects than asked', (body) => Buffer.concat([packHeader(createHash('sha256').update(EVIL).digest('hex'), EVIL.length), EVIL, body.subarray(0, Math.max(0, body.length - EVIL.length - 40))]), 'INTEGRITY_MISMATCH'],
  ['cut short', (body) => body.subarray(0, body.length - 1), 'INTEGRITY_MISMATCH'],
  ['longer than asked', (body) => Buffer.concat([body, Buffer.from('x')]), 'INTEGRITY_MISMATCH'],
  // 1 MiB of zeros is about 1 KiB of gzip: within the wire's bound, refused as it inflates.
  ['a gzip bomb (a pack of zeros far past what was asked)', () => Buffer.alloc(1024 * 1024), 'INTEGRITY_MISMATCH'],
];

for (const [what, change, code] of cases) {
  test(`a pack that is ${what} is refused (${code}) and the tarball is staged`, async (t) => {
    const { s, srv, cleanup } = await objectAttackHost();
    t.after(cleanup);
    await stageIndexed(s, srv, '1.0.0', releaseOf('1.0.0', 'one\n'));
    const before = await objectNames(s);
    srv.tamper.pack = change;
    const r = await stageIndexed(s, srv, '1.1.0', releaseOf('1.1.0', 'two\n'));
    assert.equal(r.via, 'tarball');
    assert.equal(r.fallback?.code, code, r.fallback?.message);
    const after = await objectNames(s);
    assert.ok(!after.some((n) => n.startsWith(createHash('sha256').update(EVIL).digest('hex'))), 'the evil object was not kept');
    assert.ok(before.every((n) => after.includes(n)));
    await assertNothingUntrusted(s);
  });
}
