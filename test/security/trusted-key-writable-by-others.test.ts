import { test } from 'node:test';
import { chmodSync } from 'node:fs';
import { assertKeyFlawRefused } from '../helpers/trusted-key-attack.js';

// The attack: a release key file left 0666. Any local user may put their own key in it and
// sign releases root installs. Root ignores it; the key beside it still counts.

test('a trusted key file writable by everyone (0666) is ignored, and named in the refusal', async () => {
  await assertKeyFlawRefused({
    apply: (_s, keyFile) => chmodSync(keyFile, 0o666),
    says: (_s, keyFile) => `${keyFile} is writable by group or others (mode 666)`,
  });
});
