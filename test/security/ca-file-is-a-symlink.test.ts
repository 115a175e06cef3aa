import { test } from 'node:test';
import { rmSync, symlinkSync } from 'node:fs';
import { assertCaFlawRefused, copyOutside } from '../helpers/ca-file-attack.js';

// The attack: the configured CA file is a symlink to a file elsewhere, whose folders the trust
// check never sees. Whoever can write the target chooses the CA. The helper does not follow it.

test('a symlinked CA file is not followed: refused before any fetch', async (t) => {
  await assertCaFlawRefused(t, {
    apply: (caFile, caDir) => {
      const elsewhere = copyOutside(caFile, caDir);
      rmSync(caFile);
      symlinkSync(elsewhere, caFile);
    },
    says: (caFile) => `${caFile} is a symlink (not followed)`,
  });
});
