import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PACK_HEADER_BYTES } from '../../src/core/object-pack.js';
import { stageIndexed } from '../helpers/object-server.js';
import { assertNothingUntrusted, objectAttackHost } from '../helpers/object-attacks.js';
import { releaseOf } from '../helpers/object-releases.js';

// docs/design.md §20: an object in a pack whose bytes are not the sha256 it is sent as never becomes
// an object; the stage refuses the pack (INTEGRITY_MISMATCH) and takes the tarball instead.
test('a pack object whose bytes do not match its name is refused, and the tarball is staged instead', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', releaseOf('1.0.0', 'one\n'));
  srv.tamper.pack = (body) => {
    const b = Buffer.from(body);
    b[PACK_HEADER_BYTES] = (b[PACK_HEADER_BYTES] as number) ^ 0xff; // the first object's first byte
    return b;
  };
  const r = await stageIndexed(s, srv, '1.1.0', releaseOf('1.1.0', 'two\n'));
  assert.equal(r.via, 'tarball');
  assert.equal(r.fallback?.code, 'INTEGRITY_MISMATCH');
  assert.match(r.fallback?.message ?? '', /holds other bytes/);
  await assertNothingUntrusted(s);
});
