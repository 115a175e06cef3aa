import { test } from 'node:test';
import { chownSync } from 'node:fs';
import { IS_ROOT } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';
import { assertKeyFlawRefused } from '../helpers/trusted-key-attack.js';

// The attack: a release key file in trusted-keys/web/ owned by another user (a member of the
// steward group, an app's user). That user may rewrite it with their own key at any time and
// sign releases root installs. Root ignores it; the key beside it still counts.

test('a trusted key file owned by a user other than root is ignored, and named in the refusal', async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'giving the key file to another uid needs root');
  await assertKeyFlawRefused({
    apply: (_s, keyFile) => chownSync(keyFile, 65534, 65534),
    says: (_s, keyFile) => `${keyFile} is owned by uid 65534, not root`,
  });
});
