import { test } from 'node:test';
import { chownSync } from 'node:fs';
import path from 'node:path';
import { trustedKeysFor } from '../../src/core/paths.js';
import { IS_ROOT } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';
import type { StagedHost } from '../helpers/stage-harness.js';
import { assertKeyFlawRefused } from '../helpers/trusted-key-attack.js';

// The attack: root-owned 0644 key files in a folder another user owns: trusted-keys/web/,
// trusted-keys/ or etc/steward/. That user may add, remove or swap key files (or whole
// folders) at will. No key under such a folder is trusted, and the refusal names the folder.

const folders: Array<[string, (s: StagedHost) => string]> = [
  ['trusted-keys/web/', (s) => trustedKeysFor(s.host.paths, 'web')],
  ['trusted-keys/', (s) => s.host.paths.trustedKeysDir],
  ['etc/steward/', (s) => path.dirname(s.host.paths.configFile)],
];

for (const [name, folderOf] of folders) {
  test(`no key is trusted when ${name} is owned by another user`, async (t) => {
    if (!IS_ROOT) return skipUnlessCI(t, 'giving a folder to another uid needs root');
    await assertKeyFlawRefused({
      apply: (s) => chownSync(folderOf(s), 65534, 65534),
      says: (s) => `${folderOf(s)} is owned by uid 65534, not root`,
      inFolder: true,
    });
  });
}
