import { test } from 'node:test';
import { chmodSync, chownSync } from 'node:fs';
import { IS_ROOT } from '../helpers/host.js';
import { assertKeyFlawRefused } from '../helpers/trusted-key-attack.js';

// The attack: a root-owned release key file left group-writable (0664, a umask of 002, or a
// group steward can write). Every member of that group may put their own key in it and sign
// releases root installs. Root ignores it; the key beside it still counts.

test('a group-writable trusted key file is ignored, and named in the refusal', async () => {
  await assertKeyFlawRefused({
    apply: (_s, keyFile) => {
      // As root, the file keeps root as its owner and gets a group with members (nogroup here).
      if (IS_ROOT) chownSync(keyFile, 0, 65534);
      chmodSync(keyFile, 0o664);
    },
    says: (_s, keyFile) => `${keyFile} is writable by group or others (mode 664)`,
  });
});
