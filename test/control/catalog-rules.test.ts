// The catalog rules of docs/design.md §11 through the CLI (a real child process on the database of an
// in-process control plane): a version is immutable, another key needs --resign, only the keys
// allowed for an app sign it, `release remove` waits for the running rollout, `release list`
// flags manifests that expire within 7 days, `keys list` shows who may sign what.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startRun, stopRun } from '../../src/control/rollouts/start-run.js';
import { REPO } from '../helpers/host.js';
import { FakeClock, FakeNode, startControlInProcess, type Control } from '../helpers/control-harness.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
let c: Control;
let keyA = '';
let keyB = '';

function cli(...args: string[]): Promise<{ code: number; json: any; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--db', c.dbFile, ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      let json: unknown = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        // human output
      }
      resolve({ code: typeof code === 'number' ? code : 1, json, stdout, stderr });
    });
  });
}

const tgz = (name: string, text: string) => {
  const f = path.join(c.dir, name);
  writeFileSync(f, text);
  return f;
};
const add = (app: string, version: string, file: string, key: string, ...extra: string[]) => cli('release', 'add', app, version, '--file', file, '--base-url', c.server.url, '--key', key, ...extra, '--json');

before(async () => {
  c = await startControlInProcess({ clock: new FakeClock(Date.now()) });
  keyA = (await cli('keys', 'create', '--out', path.join(c.dir, 'ka'), '--json')).json.privateKeyFile;
  keyB = (await cli('keys', 'create', '--out', path.join(c.dir, 'kb'), '--json')).json.privateKeyFile;
});
after(() => c.close());

test('the same bytes and key refresh the expiry; other bytes are refused RELEASE_EXISTS (exit 3)', async () => {
  const file = tgz('api-1.tgz', 'api one');
  const first = await add('api', '1.0.0', file, keyA);
  assert.deepEqual([first.code, first.json.change], [0, 'added'], first.stderr);
  const again = await add('api', '1.0.0', file, keyA, '--expires-days', '60');
  assert.deepEqual([again.code, again.json.change], [0, 'refreshed']);
  assert.ok(again.json.payload.expires > first.json.payload.expires);
  const other = await add('api', '1.0.0', tgz('api-1b.tgz', 'api one, other bytes'), keyA);
  assert.deepEqual([other.code, other.json.error.code], [3, 'RELEASE_EXISTS']);
});

test('only the keys allowed for an app sign it; another allowed key needs --resign for an existing version, and the output says it replaced the manifest', async () => {
  const file = tgz('api-2.tgz', 'api two');
  const stranger = await add('api', '2.0.0', file, keyB);
  assert.deepEqual([stranger.code, stranger.json.error.code], [3, 'FORBIDDEN']);
  assert.match(stranger.json.error.message, /keys allow api/);
  const allow = await cli('keys', 'allow', 'api', '--key', keyB.replace(/\.key$/, '.pub'), '--json');
  assert.equal(allow.code, 0, allow.stderr);
  assert.equal((await add('api', '2.0.0', file, keyB)).json.change, 'added');
  const noResign = await add('api', '1.0.0', path.join(c.dir, 'api-1.tgz'), keyB);
  assert.deepEqual([noResign.code, noResign.json.error.code], [3, 'RELEASE_EXISTS']);
  assert.match(noResign.json.error.message, /--resign/);
  const resigned = await add('api', '1.0.0', path.join(c.dir, 'api-1.tgz'), keyB, '--resign', '--json');
  assert.deepEqual([resigned.json.change, resigned.json.keyId, resigned.json.replacedKeyId], ['resigned', allow.json.keyId, (await cli('keys', 'list', 'api', '--json')).json.keys[0].keyId]);
  const human = await cli('release', 'add', 'api', '1.0.0', '--file', path.join(c.dir, 'api-1.tgz'), '--base-url', c.server.url, '--key', keyA, '--resign');
  assert.match(human.stdout, /the manifest signed by key [0-9a-f]{16} was replaced/);
  const keys = await cli('keys', 'list', '--json');
  assert.deepEqual(keys.json.keys.map((k: { app: string; keyId: string }) => k.app), ['api', 'api']);
});

test('release list flags manifests that expire within 7 days', async () => {
  await add('cron', '1.0.0', tgz('cron.tgz', 'cron'), keyA, '--expires-days', '3');
  await add('cron', '1.1.0', tgz('cron2.tgz', 'cron 2'), keyA, '--expires-days', '30');
  const list = await cli('release', 'list', 'cron', '--json');
  assert.deepEqual(list.json.releases.map((r: { version: string; expiresSoon: boolean }) => [r.version, r.expiresSoon]), [['1.0.0', true], ['1.1.0', false]]);
  assert.match((await cli('release', 'list', 'cron')).stdout, /within 7 days/);
});

test('release remove is refused while a running rollout uses the version, then removes it and its tarball', async () => {
  await c.addRelease('web', '1.1.0');
  const n = await new FakeNode(c, 'h').enroll();
  n.setCurrent('web', '1.0.0');
  await n.heartbeat();
  await startRun(c.store, 'web', '1.1.0', {});
  const busy = await cli('release', 'remove', 'web', '1.1.0', '--json');
  assert.deepEqual([busy.code, busy.json.error.code], [3, 'BUSY']);
  await stopRun(c.store, 'web');
  const file = path.join(`${c.dbFile}.artifacts`, 'web', '1.1.0.tgz');
  assert.equal(existsSync(file), true);
  const removed = await cli('release', 'remove', 'web', '1.1.0', '--json');
  assert.deepEqual([removed.code, removed.json.removed], [0, { app: 'web', version: '1.1.0' }]);
  assert.equal(existsSync(file), false);
  assert.deepEqual((await cli('release', 'list', 'web', '--json')).json.releases, []);
  assert.deepEqual((await cli('release', 'remove', 'web', '1.1.0', '--json')).json.error.code, 'NOT_FOUND');
});
