// A backup concatenated with itself (gzip readers read both members as one stream) is not a
// backup: the restore reads the first copy to its signed end line, then refuses the line after
// it BACKUP_INVALID, and rolls back what it loaded; the target is as it was. Before, the second
// copy's header was fed to the digest already taken: `INTERNAL: Digest already called`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { restoreRefusedInvalid, runRestore, testBackupKey } from '../helpers/backup-file.js';
import { cliJson } from '../helpers/control-daemon-nodes.js';
import { createKeys } from '../../src/control/catalog/create-keys.js';
import { addRelease, createToken } from '../helpers/control-seed.js';
import { controlCli } from '../helpers/fleet.js';
import { describeEachBackend } from '../helpers/store-backends.js';
import { scratchDir } from '../helpers/scratch.js';

describeEachBackend((backend) => {
  test('a backup concatenated with itself is refused BACKUP_INVALID and restores nothing, not even its tarball', async () => {
    const dir = scratchDir('steward-doubled-backup-');
    const db = await backend.createDatabase();
    const artifacts = path.join(dir, 'artifacts');
    const on = { cli: (a: string[]) => controlCli(db, ['--artifacts', artifacts, ...a]) };
    // The store's data, made in this process by what the CLI runs (control-seed.ts): the backup is the subject.
    const keys = await createKeys(path.join(dir, 'keys'), 'release');
    const tarball = path.join(dir, 'web-1.0.0.tgz');
    writeFileSync(tarball, randomBytes(64 * 1024));
    await addRelease(db, artifacts, { app: 'web', version: '1.0.0', file: tarball, baseUrl: 'http://127.0.0.1:1', key: keys.privateKeyFile });
    await createToken(db, artifacts);
    const file = path.join(dir, 'control.backup');
    await cliJson(on, ['backup', '--key', testBackupKey().key, '--out', file]);

    const doubled = path.join(dir, 'doubled.backup');
    const once = readFileSync(file);
    writeFileSync(doubled, Buffer.concat([once, once]));
    const r = await restoreRefusedInvalid(backend, doubled, /goes on after its end line/);
    assert.doesNotMatch(r.stdout, /INTERNAL|Digest/);

    // The single copy restores.
    const ok = await runRestore(await backend.emptyTarget(), path.join(dir, 'restored-artifacts'), file);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.equal(ok.json.artifacts, 1);
  });
});
