import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expectExtracts, listDest, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';

test('entries owned by uid 1234, gid 5678, "evil" in the archive extract owned by root', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectExtracts(sb, hostileArchive('foreign-owner').build());
  const entries = await listDest(sb);
  assert.ok(entries.some((e) => e.rel === 'owned/link' && e.st.isSymbolicLink()), 'the symlink was extracted');
  const me = [process.getuid?.(), process.getgid?.()];
  for (const { rel, st } of entries) {
    // As root everything is 0:0; otherwise the process's own ids (never the archive's).
    assert.deepEqual([st.uid, st.gid], process.getuid?.() === 0 ? [0, 0] : me, `${rel} owner`);
    assert.equal(st.mode & 0o7000, 0, `${rel} has no special bits`);
  }
});
