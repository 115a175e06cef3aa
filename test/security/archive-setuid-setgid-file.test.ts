import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expectExtracts, listDest, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';

test('setuid, setgid and sticky bits are stripped and the tree extracts read-only', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectExtracts(sb, hostileArchive('setuid-setgid-file').build());
  const modes = new Map<string, number>();
  for (const { rel, st } of await listDest(sb)) {
    assert.equal(st.mode & 0o7000, 0, `${rel} has no setuid, setgid or sticky bit`);
    if (process.getuid?.() === 0) assert.deepEqual([st.uid, st.gid], [0, 0], `${rel} is owned by root`);
    modes.set(rel, st.mode & 0o7777);
  }
  assert.equal(modes.get('bin/suid'), 0o555);
  assert.equal(modes.get('bin/sgid'), 0o555);
  assert.equal(modes.get('bin'), 0o555);
  assert.equal(modes.get('shared'), 0o555, 'a 1777 folder becomes 0555');
  assert.equal(modes.get('shared/setuid-not-exec'), 0o444);
});
