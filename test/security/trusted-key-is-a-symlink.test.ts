import { test } from 'node:test';
import { copyFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { assertKeyFlawRefused } from '../helpers/trusted-key-attack.js';

// The attack: a release key "file" in trusted-keys/web/ that is a symlink to a key elsewhere,
// in a place whose owner the trust check of the folder never sees (here, a scratch folder).
// Whoever can write the target chooses the key. Root does not follow it; it says why.

test('a symlinked trusted key file is not followed, and named in the refusal', async () => {
  await assertKeyFlawRefused({
    apply: (s, keyFile) => {
      const elsewhere = path.join(s.host.scratch, path.basename(keyFile));
      copyFileSync(keyFile, elsewhere);
      rmSync(keyFile);
      symlinkSync(elsewhere, keyFile);
    },
    says: (_s, keyFile) => `${keyFile} is a symlink (not followed)`,
  });
});
