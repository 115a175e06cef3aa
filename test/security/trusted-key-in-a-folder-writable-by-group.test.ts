import { test } from 'node:test';
import { chmodSync } from 'node:fs';
import path from 'node:path';
import { trustedKeysFor } from '../../src/core/paths.js';
import type { StagedHost } from '../helpers/stage-harness.js';
import { assertKeyFlawRefused } from '../helpers/trusted-key-attack.js';

// The attack: root-owned 0644 key files in a folder that group or others may write
// (trusted-keys/web/, trusted-keys/ or etc/steward/): anyone who may write it can drop in their
// own key file or swap the folder below. No key under such a folder is trusted, and the refusal
// names the folder. A sticky bit does not help there (only above the root prefix).

const folders: Array<[string, (s: StagedHost) => string]> = [
  ['trusted-keys/web/', (s) => trustedKeysFor(s.host.paths, 'web')],
  ['trusted-keys/', (s) => s.host.paths.trustedKeysDir],
  ['etc/steward/', (s) => path.dirname(s.host.paths.configFile)],
];

for (const [name, folderOf] of folders) {
  for (const mode of [0o775, 0o757, 0o1777]) {
    test(`no key is trusted when ${name} is mode ${mode.toString(8)}`, async () => {
      await assertKeyFlawRefused({
        apply: (s) => chmodSync(folderOf(s), mode),
        says: (s) => `${folderOf(s)} is writable by group or others (mode ${mode.toString(8)})`,
        inFolder: true,
      });
    });
  }
}
