// Whoever can write where backups are kept must not be able to make one that restores: a real
// backup with an admin operator added (a token hash the attacker knows) and its end line's sha256
// recomputed, as anyone can, is refused BACKUP_INVALID by `restore --key`, whether the attacker
// keeps the old signature, drops it, or signs with a key of their own (under their key's id or
// under the real one's). The untouched backup restores with the backup key's public half, and
// with its private half. docs/control-plane.md, "The backup key".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { backupBody, endLineOf, newBackupKey, readBackupLines, restoreRefusedInvalid, runRestore, testBackupKey, withRows, writeBackupLines } from '../helpers/backup-file.js';
import { cliJson } from '../helpers/control-daemon-nodes.js';
import { controlCli } from '../helpers/fleet.js';
import { describeEachBackend } from '../helpers/store-backends.js';
import { scratchDir } from '../helpers/scratch.js';

const tmp = () => scratchDir('steward-altered-backup-');

describeEachBackend((backend) => {
  test('a backup with an admin operator added and its sha256 recomputed is refused, however it is signed; the untouched one restores', async () => {
    const dir = tmp();
    const db = await backend.createDatabase();
    const on = { cli: (a: string[]) => controlCli(db, ['--artifacts', path.join(dir, 'artifacts'), ...a]) };
    await cliJson(on, ['operator', 'add', 'alice', '--role', 'viewer']);
    const file = path.join(dir, 'control.backup');
    await cliJson(on, ['backup', '--key', testBackupKey().key, '--out', file]);

    const body = backupBody(file);
    const [realEnd] = readBackupLines(file).slice(-1) as [{ signature: string }];
    const knownToken = 'st_' + 'a'.repeat(43);
    const altered = withRows(body, 'operators', [['mallory', 'admin', createHash('sha256').update(knownToken).digest('hex'), Date.now(), null]]);

    // The digest recomputed without a key, the backup's own signature kept.
    const keptSignature = path.join(dir, 'kept-signature.backup');
    const text = altered.map((l) => JSON.stringify(l) + '\n').join('');
    const sha256 = createHash('sha256').update(text).digest('hex');
    writeFileSync(keptSignature, gzipSync(text + JSON.stringify({ end: true, lines: altered.length, sha256, signature: realEnd.signature }) + '\n'));
    await restoreRefusedInvalid(backend, keptSignature, /its signature is not the backup key/);

    // The same without a signature (the end line of an unsigned backup).
    const unsigned = path.join(dir, 'unsigned.backup');
    writeFileSync(unsigned, gzipSync(text + JSON.stringify({ end: true, lines: altered.length, sha256 }) + '\n'));
    await restoreRefusedInvalid(backend, unsigned, /the end line/);

    // Signed by the attacker's own key, under the real key's id in the header.
    const mallory = newBackupKey();
    const ownKeyRealId = path.join(dir, 'own-key-real-id.backup');
    writeBackupLines(ownKeyRealId, altered, mallory.key);
    await restoreRefusedInvalid(backend, ownKeyRealId, /its signature is not the backup key/);

    // Signed by the attacker's key under its own id: refused before a row is read.
    const [header, ...rest] = altered as [Record<string, unknown>, ...unknown[]];
    const ownKey = path.join(dir, 'own-key.backup');
    writeFileSync(ownKey, gzipSync(endLineOf([{ ...header, keyId: mallory.keyId }, ...rest], mallory.key)));
    await restoreRefusedInvalid(backend, ownKey, new RegExp(`signed by the backup key ${mallory.keyId}, not by ${testBackupKey().keyId}`));

    // An unsigned backup of the earlier format is refused, saying what it is.
    const v1 = path.join(dir, 'v1.backup');
    const { keyId: _keyId, ...v1Header } = header;
    writeFileSync(v1, gzipSync(endLineOf([{ ...v1Header, formatVersion: 1 }, ...body.slice(1)]).replace(/,"signature":"[^"]*"/, '')));
    await restoreRefusedInvalid(backend, v1, /unsigned backup \(format version 1/);

    // The backup as it was taken restores, with either half of the backup key, and holds no mallory.
    for (const keyFile of [testBackupKey().pub, testBackupKey().key]) {
      const target = await backend.emptyTarget();
      const artifacts = path.join(tmp(), 'artifacts');
      const r = await runRestore(target, artifacts, file, { keyFile });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.equal(r.json.keyId, testBackupKey().keyId);
      const operators = await cliJson({ cli: (a) => controlCli(target, ['--artifacts', artifacts, ...a]) }, ['operator', 'list']);
      assert.deepEqual(operators.operators.map((o: { name: string; role: string }) => [o.name, o.role]), [['alice', 'viewer']]);
    }
  });

  test('restore refuses to run without the backup key, and a key file that is not an Ed25519 key', async () => {
    const dir = tmp();
    const db = await backend.createDatabase();
    const file = path.join(dir, 'control.backup');
    await cliJson({ cli: (a: string[]) => controlCli(db, ['--artifacts', path.join(dir, 'artifacts'), ...a]) }, ['backup', '--key', testBackupKey().key, '--out', file]);
    const target = await backend.emptyTarget();
    const noKey = await controlCli(target, ['--artifacts', path.join(dir, 'a2'), 'restore', '--from', file, '--json']);
    assert.equal(noKey.code, 2, noKey.stdout + noKey.stderr);
    assert.match(noKey.stderr + noKey.stdout, /--key/);
    const notAKey = path.join(dir, 'not-a-key.pem');
    writeFileSync(notAKey, 'hello\n');
    const r = await runRestore(target, path.join(dir, 'a3'), file, { keyFile: notAKey });
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal(r.json.error.code, 'USAGE');
  });
});
