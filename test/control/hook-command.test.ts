// `steward-control hook add|list|remove|test` and `audit --format` from the command line (docs/control-plane.md,
// "Telling people: hooks"): a hook's secret is never shown back (only a secret it made, once, by
// add); bad input (a bad URL, an unknown event, an unreadable or short secret file, a taken name) is
// refused with its reason code and writes nothing; `hook test` posts a signed test event and
// reports the answer, trusting a private CA with --ca-file.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { verifySignature } from '../../src/control/hooks/sign-event.js';
import { REPO } from '../helpers/host.js';
import { startHookReceiver, type HookReceiver } from '../helpers/hook-receiver.js';
import { privateCa } from '../helpers/tls-cert.js';
import { startServeProcess } from '../helpers/serve-process.js';
import { openStore } from '../../src/control/store/open-store.js';
import { emitEvent } from '../../src/control/hooks/emit-event.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
const SECRET = 'a-secret-nobody-else-may-see-0123456789';
let dir = '';
let db = '';
let secretFile = '';
let plain: HookReceiver;
let tls: HookReceiver;
let caFile = '';

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string; json: any }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--db', db, ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => {
      let json: unknown = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        // not JSON: a human's output
      }
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr, json });
    });
  });
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'steward-hooks-'));
  db = path.join(dir, 'control.db');
  secretFile = path.join(dir, 'secret');
  writeFileSync(secretFile, SECRET + '\n', { mode: 0o600 });
  assert.equal((await cli('init')).code, 0);
  plain = await startHookReceiver();
  const ca = privateCa(dir);
  caFile = ca.caFile;
  tls = await startHookReceiver({ tls: { key: ca.key, cert: ca.cert } });
});
after(async () => {
  await plain.close();
  await tls.close();
  rmSync(dir, { recursive: true, force: true });
});

test('hook add with --secret-file, then list (table and --json): the secret is never shown back, nor in the audit log', async () => {
  const add = await cli('hook', 'add', 'ops', '--url', plain.url, '--events', 'run.halted, target.behind,run.halted', '--secret-file', secretFile, '--json');
  assert.equal(add.code, 0, add.stderr);
  assert.deepEqual([add.json.name, add.json.url, add.json.events, add.json.pending], ['ops', plain.url, ['run.halted', 'target.behind'], 0]);
  assert.equal('secret' in add.json, false);
  const list = await cli('hook', 'list', '--json');
  assert.deepEqual(list.json.hooks.map((h: { name: string }) => h.name), ['ops']);
  const table = await cli('hook', 'list');
  const audit = await cli('audit', '--json');
  for (const out of [add.stdout, list.stdout, table.stdout, audit.stdout, add.stderr]) assert.ok(!out.includes(SECRET), 'the secret is not shown');
  assert.match(table.stdout, /^ops\s+http:\/\/127\.0\.0\.1:\d+\/hook\s+run\.halted,target\.behind\s+0\s+0\s+0/m);
  assert.deepEqual(audit.json.entries.at(-1).details, { url: plain.url, events: ['run.halted', 'target.behind'], secret: 'given' });
});

test('hook add without --secret-file makes a secret and prints it once; list never shows it', async () => {
  const add = await cli('hook', 'add', 'made', '--url', plain.url, '--events', '*');
  assert.equal(add.code, 0, add.stderr);
  const secret = add.stdout.trim();
  assert.match(secret, /^[0-9a-f]{64}$/);
  assert.match(add.stderr, /shown once/);
  const list = await cli('hook', 'list', '--json');
  assert.equal(list.json.hooks.find((h: { name: string }) => h.name === 'made').events.length, 9);
  assert.ok(!list.stdout.includes(secret));
  assert.equal((await cli('hook', 'remove', 'made')).code, 0);
});

test('bad input is refused with its reason code and writes nothing', async () => {
  const missing = path.join(dir, 'no-such-secret');
  const short = path.join(dir, 'short');
  writeFileSync(short, 'tooshort\n');
  const folder = path.join(dir, 'a-folder');
  mkdirSync(folder);
  const cases: Array<[string[], number, string, RegExp]> = [
    [['--url', 'not a url', '--events', 'run.halted'], 2, 'USAGE', /not a URL/],
    [['--url', 'http://hooks.example.com/x', '--events', 'run.halted'], 2, 'USAGE', /plain http is only for a loopback host/],
    [['--url', 'ftp://127.0.0.1/x', '--events', 'run.halted'], 2, 'USAGE', /https/],
    [['--url', 'https://user:pw@hooks.example.com/x', '--events', 'run.halted'], 2, 'USAGE', /user or password/],
    [['--url', plain.url, '--events', 'run.halted,run.exploded'], 2, 'USAGE', /"run\.exploded" is not an event steward-control sends; they are: run\.started/],
    [['--url', plain.url, '--events', ','], 2, 'USAGE', /names no event/],
    [['--url', plain.url, '--events', 'run.halted', '--secret-file', missing], 1, 'NOT_FOUND', /cannot read --secret-file .*no-such-secret/],
    [['--url', plain.url, '--events', 'run.halted', '--secret-file', folder], 2, 'USAGE', /not a regular file/],
    [['--url', plain.url, '--events', 'run.halted', '--secret-file', short], 2, 'USAGE', /at least 16/],
  ];
  for (const [args, code, reason, message] of cases) {
    const r = await cli('hook', 'add', 'bad', ...args, '--json');
    assert.deepEqual([r.code, r.json?.error?.code], [code, reason], `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.json.error.message, message);
  }
  const dup = await cli('hook', 'add', 'ops', '--url', 'https://elsewhere.example/', '--events', 'run.paused', '--json');
  assert.deepEqual([dup.code, dup.json.error.code], [3, 'HOOK_EXISTS']);
  const list = await cli('hook', 'list', '--json');
  assert.deepEqual(list.json.hooks.map((h: { name: string; url: string }) => [h.name, h.url]), [['ops', plain.url]], 'nothing written');
  const gone = await cli('hook', 'remove', 'nobody', '--json');
  assert.deepEqual([gone.code, gone.json.error.code], [1, 'NOT_FOUND']);
});

test("hook test posts a signed dev.steward.hook.test event now and reports the receiver's answer; a redirect is a failure, not followed", async () => {
  const r = await cli('hook', 'test', 'ops', '--json');
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.deepEqual([r.json.hook, r.json.delivered, r.json.status, r.json.message], ['ops', true, 204, 'answered 204']);
  const got = plain.received.at(-1)!;
  const event = JSON.parse(got.body);
  assert.deepEqual([event.type, event.id, event.specversion, event.subject], ['dev.steward.hook.test', r.json.eventId, '1.0', 'hook/ops']);
  assert.ok(verifySignature(SECRET, got.body, String(got.headers['steward-signature']), Date.now()), 'signed with the secret file, less its newline');
  assert.equal(got.headers['idempotency-key'], event.id);

  plain.mode = { kind: 'redirect', status: 302, location: 'http://169.254.169.254/latest/meta-data/' };
  try {
    const before = plain.received.length;
    const human = await cli('hook', 'test', 'ops');
    assert.equal(human.code, 1);
    assert.match(human.stderr, /answered 302, a redirect to http:\/\/169\.254\.169\.254\/latest\/meta-data\/: redirects are never followed/);
    assert.equal(plain.received.length, before + 1);
  } finally {
    plain.mode = { kind: 'ok' };
  }
});

test("a receiver with a private CA's certificate is refused until --ca-file names the CA", async () => {
  assert.equal((await cli('hook', 'add', 'private', '--url', tls.url, '--events', 'run.halted', '--secret-file', secretFile)).code, 0);
  const untrusted = await cli('hook', 'test', 'private', '--json');
  assert.deepEqual([untrusted.code, untrusted.json.error.code], [1, 'HOOK_DELIVERY_FAILED']);
  assert.match(untrusted.json.error.message, /cannot post: .*(certificate|verify)/i);
  assert.equal(tls.received.length, 0);
  const trusted = await cli('--ca-file', caFile, 'hook', 'test', 'private', '--json');
  assert.equal(trusted.code, 0, trusted.stdout);
  assert.equal(tls.received.length, 1);
  const audit = (await cli('audit', '--json')).json.entries.filter((e: { action: string }) => e.action === 'hook.test');
  assert.deepEqual(audit.slice(-2).map((e: { details: { ok: boolean } }) => e.details.ok), [false, true]);
});

test("serve delivers to a receiver with a private CA's certificate once --ca-file names the CA, and says why not without it", { timeout: 60_000 }, async () => {
  const before = tls.received.length;
  const store = await openStore(db);
  const [id] = await store.write(async (tx) => [await emitEvent(tx, 'run.halted', 'run/7', { run: { id: 7 } })]);
  await store.close();
  const rowOf = async () => {
    const s = await openStore(db);
    try {
      return (await s.read((tx) => tx.hooks.deliveries('private', 10))).find((d) => d.eventId === id);
    } finally {
      await s.close();
    }
  };
  const untrusting = await startServeProcess(db, ['--hook-timeout', '2'], { env: { ...process.env, DEBUG: '' } });
  try {
    for (let i = 0; i < 100 && (await rowOf())?.attempts === 0; i++) await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    await untrusting.stop();
  }
  const failed = await rowOf();
  assert.equal(failed?.state, 'pending');
  assert.match(failed!.lastError!, /^HOOK_DELIVERY_FAILED: cannot post: .*(certificate|verify)/i);
  assert.equal(tls.received.length, before);

  const missing = await cli('serve', '--listen', '127.0.0.1:0', '--ca-file', path.join(dir, 'no-such-ca.pem'), '--json');
  assert.deepEqual([missing.code, missing.json?.error?.code], [1, 'NOT_FOUND'], missing.stdout + missing.stderr);
  assert.match(missing.json.error.message, /^cannot read --ca-file .*no-such-ca\.pem: ENOENT/);

  const trusting = await startServeProcess(db, ['--ca-file', caFile, '--hook-timeout', '2']);
  try {
    for (let i = 0; i < 100 && (await rowOf())?.state !== 'delivered'; i++) await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    await trusting.stop();
  }
  assert.equal((await rowOf())?.state, 'delivered');
  const got = tls.received.filter((r) => JSON.parse(r.body).id === id);
  assert.equal(got.length, 1);
  assert.ok(verifySignature(SECRET, got[0]!.body, String(got[0]!.headers['steward-signature']), Date.now()));
});
