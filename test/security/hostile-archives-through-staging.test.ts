import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { versionDir } from '../../src/core/paths.js';
import { HOSTILE_ARCHIVES, HOSTILE_VERSION, hostileRelease, manyFiles } from '../fixtures/hostile-archives.js';
import { assertStageRefused, hostWithCurrent, stageBytes } from '../helpers/stage-harness.js';

// Every archive attack again, now through the whole staging pipeline (fetch, integrity,
// extraction, checks, commit) as the helper runs it: refused with UNSAFE_ARCHIVE, nothing
// written outside the staging folder (absolute targets aim inside the temp host), the
// staging folder gone, `current` untouched. The sanitized ones stage, root-owned and read-only.
// Each one twice: from a local file (hashed, then extracted), and fetched over http under a
// signed manifest, where the extraction runs while the bytes arrive (docs/design.md §3 step 4).
const VIAS = [['file', 'from a local file'], ['fetch', 'fetched as it is extracted']] as const;

// The too-many-entries archive holds one entry more than the default cap of 100,000; writing
// them takes ~10 s of CPU a run. Through staging, what is checked is that the pipeline refuses
// at the cap and leaves nothing behind, so a host with a cap of 1,000 gets 1,001 entries here;
// the default cap itself is test/security/archive-too-many-entries.
const SMALL_CAP = 1000;

for (const [via, how] of VIAS) {
  for (const attack of HOSTILE_ARCHIVES.filter((a) => a.expect === 'refused')) {
    test(`staging refuses the ${attack.name} archive ${how} and leaves nothing behind`, async () => {
      const err = await assertStageRefused(
        (s) => (attack.manyFiles ? hostileRelease(manyFiles(SMALL_CAP + 1 - 2)) : attack.build({ outside: path.join(path.dirname(s.host.root), 'outside') })),
        'UNSAFE_ARCHIVE',
        { version: HOSTILE_VERSION },
        { inMemory: attack.manyFiles, via, ...(attack.manyFiles ? { config: { extract: { maxEntries: SMALL_CAP } } } : {}) },
      );
      if (attack.manyFiles) assert.match(err.message, new RegExp(`more than ${SMALL_CAP} entries`));
      assert.match(err.message, /unsafe archive/);
    });
  }
}

for (const [via, how] of VIAS) {
  for (const attack of HOSTILE_ARCHIVES.filter((a) => a.expect === 'extracts')) {
    test(`staging accepts the ${attack.name} archive ${how} only once it is sanitized`, async () => {
      const s = await hostWithCurrent();
      try {
        const err = await stageBytes(s, attack.build(), { version: HOSTILE_VERSION }, via);
        assert.equal(err, null, err?.message);
        const stack = [versionDir(s.host.paths, 'web', HOSTILE_VERSION)];
        while (stack.length) {
          const p = stack.pop() as string;
          const st = await fsp.lstat(p);
          assert.equal(st.mode & 0o7000, 0, `${p} keeps 07000 bits`);
          if (!st.isSymbolicLink()) assert.equal(st.mode & 0o222, 0, `${p} is writable`);
          if (process.getuid?.() === 0) assert.deepEqual([st.uid, st.gid], [0, 0], `${p} is not root's`);
          if (st.isDirectory()) for (const n of await fsp.readdir(p)) stack.push(path.join(p, n));
        }
      } finally {
        s.host.cleanup();
      }
    });
  }
}
