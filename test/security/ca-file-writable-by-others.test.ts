import { test } from 'node:test';
import { chmodSync, chownSync } from 'node:fs';
import { IS_ROOT } from '../helpers/host.js';
import { assertCaFlawRefused } from '../helpers/ca-file-attack.js';

// The attack: the CA file of the helper's https fetches (`fetch.caFile`) left writable by
// others, or by a group: anyone who may write it adds their own CA, and a server of theirs
// passes for the release server. The helper refuses to fetch with it.

test('a CA file writable by everyone (0666) is refused before any fetch', async (t) => {
  await assertCaFlawRefused(t, {
    apply: (caFile) => chmodSync(caFile, 0o666),
    says: (caFile) => `${caFile} is writable by group or others (mode 666)`,
  });
});

test('a group-writable CA file (0664) is refused before any fetch', async (t) => {
  await assertCaFlawRefused(t, {
    apply: (caFile) => {
      if (IS_ROOT) chownSync(caFile, 0, 65534);
      chmodSync(caFile, 0o664);
    },
    says: (caFile) => `${caFile} is writable by group or others (mode 664)`,
  });
});
