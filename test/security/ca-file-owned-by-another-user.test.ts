import { test } from 'node:test';
import { chownSync } from 'node:fs';
import { IS_ROOT } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';
import { assertCaFlawRefused } from '../helpers/ca-file-attack.js';

// The attack: the CA file of the helper's https fetches owned by another user, who may rewrite
// it with a CA of their own. The helper refuses to fetch with it.

test('a CA file owned by a user other than root is refused before any fetch', async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'giving the CA file to another uid needs root');
  await assertCaFlawRefused(t, {
    apply: (caFile) => chownSync(caFile, 65534, 65534),
    says: (caFile) => `${caFile} is owned by uid 65534, not root`,
  });
});
