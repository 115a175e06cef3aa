import { test } from 'node:test';
import { chmodSync, chownSync } from 'node:fs';
import { IS_ROOT } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';
import { assertCaFlawRefused } from '../helpers/ca-file-attack.js';

// The attack: a root-owned 0644 CA file in a folder another user owns, or that a group may
// write: they may swap the file for one of theirs. The helper refuses to fetch with it.

test('a CA file in a folder another user owns is refused before any fetch', async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'giving the folder to another uid needs root');
  await assertCaFlawRefused(t, {
    apply: (_caFile, caDir) => chownSync(caDir, 65534, 65534),
    says: (_caFile, caDir) => `${caDir} is owned by uid 65534, not root`,
  });
});

test('a CA file in a group-writable folder is refused before any fetch', async (t) => {
  await assertCaFlawRefused(t, {
    apply: (_caFile, caDir) => chmodSync(caDir, 0o775),
    says: (_caFile, caDir) => `${caDir} is writable by group or others (mode 775)`,
  });
});
