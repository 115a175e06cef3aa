// `steward-control release allow-downgrade` from the command line (docs/control-plane.md, "Going back
// to an older version"): what it prints, and its clear refusals with their exit codes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { controlCli } from '../helpers/fleet.js';
import { testBackupKey } from '../helpers/backup-file.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-allow-downgrade-'));
const db = path.join(dir, 'control.db');
let web: { privateKeyFile: string; publicKeyFile: string; keyId: string };
let other: { privateKeyFile: string; keyId: string };

before(async () => {
  assert.equal((await controlCli(db, ['init', '--json'])).code, 0);
  web = (await controlCli(db, ['keys', 'create', '--out', dir, '--name', 'web', '--json'])).json;
  other = (await controlCli(db, ['keys', 'create', '--out', dir, '--name', 'other', '--json'])).json;
  for (const v of ['1.1.0', '1.5.0']) {
    const file = path.join(dir, `web-${v}.tgz`);
    writeFileSync(file, `web ${v}`);
    const r = await controlCli(db, ['release', 'add', 'web', v, '--file', file, '--url', `https://releases.invalid/web-${v}.tgz`, '--key', web.privateKeyFile, '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  }
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('it prints what hosts may now do, until when, by which key, and what to run next', async () => {
  const r = await controlCli(db, ['release', 'allow-downgrade', 'web', '1.1.0', '--key', web.privateKeyFile, '--expires-days', '2']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^authorized going back: hosts may install web 1\\.1\\.0 below the highest version they ran, until .* \\(key ${web.keyId}\\)\\nnext: steward-control rollout start web 1\\.1\\.0 \\.\\.\\.\\n$`));
  const again = await controlCli(db, ['release', 'allow-downgrade', 'web', '1.1.0', '--key', web.privateKeyFile, '--json']);
  assert.equal(again.code, 0);
  assert.equal(again.json.replaced, true);
  assert.ok(Math.abs(again.json.notAfter - (Date.now() + 7 * 86_400_000)) < 60_000, 'the default is 7 days');
  // release list shows it, by version.
  const list = await controlCli(db, ['release', 'list', 'web', '--json']);
  assert.deepEqual(list.json.releases.map((r: { version: string; downgrade: unknown }) => [r.version, r.downgrade]), [['1.1.0', { keyId: web.keyId, notAfter: again.json.notAfter, expired: false }], ['1.5.0', null]]);
  const human = await controlCli(db, ['release', 'list', 'web']);
  assert.match(human.stdout, new RegExp(`\nweb 1\\.1\\.0: hosts may go back to it until .* \\(downgrade authorized by key ${web.keyId}\\)\n$`));
});

test('an unknown app, a version not in the catalog, a key that is not a release key, and --expires-days out of range are refused with their codes', async () => {
  const cases: Array<[string[], number, string, RegExp]> = [
    [['api', '1.0.0', '--key', web.privateKeyFile], 1, 'NOT_FOUND', /no app api in the catalog/],
    [['web', '0.9.0', '--key', web.privateKeyFile], 1, 'NOT_FOUND', /web 0\.9\.0 is not in the catalog/],
    [['web', '1.1.0', '--key', other.privateKeyFile], 3, 'FORBIDDEN', new RegExp(`key ${other.keyId} is not a release key of web`)],
    [['web', '1.1.0', '--key', web.publicKeyFile], 2, 'USAGE', /--key is not an Ed25519 private key/],
    [['web', '1.1.0', '--key', path.join(dir, 'missing.key')], 1, 'NOT_FOUND', /cannot read the release key/],
    [['web', '1.1.0', '--key', web.privateKeyFile, '--expires-days', '0'], 2, 'USAGE', /--expires-days "0" is not an integer from 1 to 30/],
    [['web', '1.1.0', '--key', web.privateKeyFile, '--expires-days', '31'], 2, 'USAGE', /--expires-days "31" is not an integer from 1 to 30/],
    [['web', '1.1', '--key', web.privateKeyFile], 2, 'USAGE', /is not a version/],
  ];
  for (const [args, exit, code, message] of cases) {
    const r = await controlCli(db, ['release', 'allow-downgrade', ...args, '--json']);
    assert.deepEqual([r.code, r.json?.error?.code], [exit, code], `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.json.error.message, message);
  }
  const list = await controlCli(db, ['audit', '--json']);
  assert.equal(list.json.entries.filter((e: { action: string }) => e.action === 'release.allow-downgrade').length, 2, 'only the two that were stored are audited');
});

test('a backup carries the authorizations, and a restore brings them back where release list and the desired entries read them', async () => {
  const key = testBackupKey();
  const file = path.join(dir, 'control.backup');
  const made = await controlCli(db, ['backup', '--key', key.key, '--out', file, '--json']);
  assert.equal(made.code, 0, made.stdout + made.stderr);
  assert.equal(made.json.tables.downgrades, 1);
  const restored = path.join(dir, 'restored.db');
  const r = await controlCli(restored, ['restore', '--key', key.pub, '--from', file, '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const before = (await controlCli(db, ['release', 'list', 'web', '--json'])).json.releases;
  const after = (await controlCli(restored, ['release', 'list', 'web', '--json'])).json.releases;
  assert.deepEqual(after.map((x: { downgrade: unknown }) => x.downgrade), before.map((x: { downgrade: unknown }) => x.downgrade));
  assert.notEqual(after[0].downgrade, null);
});
