// Air-gapped signing through the real CLI (docs/trust.md, "Signing on a machine with no network"):
// a connected machine saves `trust status --json`; the key holder's machine runs `trust sign-root
// --offline --in STATUS --out SIGS` with no --server (nothing sent); a connected machine sends the
// file with `trust sign-root --signature SIGS`. Root v1 and targets v1 publish so; a signature of
// a pending item replaced since is refused by name before anything is sent; every refusal is clear.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addOperator, adminCall } from '../helpers/admin-client.js';
import { FakeClock, startControlInProcess, type Control } from '../helpers/control-harness.js';
import { CONTROL_BIN } from '../helpers/serve-process.js';
import { controlAt, writeKeyPair, type KeyFiles, type Run } from '../helpers/trust-cli.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-trust-offline-'));
let c: Control;
let token: string;
let a: KeyFiles, b: KeyFiles, cc: KeyFiles, stranger: KeyFiles;
const online = (args: string[]) => controlAt(c.server.url, args, token);
const file = (name: string) => path.join(dir, name);

// steward-control with no server, no token, no database: the air-gapped machine.
function offline(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CONTROL_BIN, ...args], { env: { ...process.env, STEWARD_CONTROL_TOKEN: '', STEWARD_CONTROL_DB: '', STEWARD_CONTROL_URL: '' } }, (error, stdout, stderr) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        /* not JSON */
      }
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr, json });
    });
  });
}

before(async () => {
  c = await startControlInProcess({ admin: {}, clock: new FakeClock(Date.now()) });
  token = await addOperator(c.store, 'adam', 'admin');
  [a, b, cc, stranger] = (['a', 'b', 'c', 'stranger'] as const).map((n) => writeKeyPair(dir, n)) as [KeyFiles, KeyFiles, KeyFiles, KeyFiles];
});
after(async () => {
  await c.close();
  rmSync(dir, { recursive: true, force: true });
});

const status = async () => (await adminCall(c.server.url, '/v1/admin/trust', { token })).body;
const saveStatus = async (name: string) => {
  const r = await online(['trust', 'status', '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  writeFileSync(file(name), r.stdout);
  return file(name);
};
const ok = (r: Run, what: string) => assert.equal(r.code, 0, `${what}: ${r.stdout}${r.stderr}`);

test('root v1 and targets v1 signed on machines with no network, sent from a connected one', async () => {
  ok(await online(['trust', 'init', '--threshold', '2', '--keys', `${a.pub},${b.pub},${cc.pub}`, '--json']), 'init');
  const st = await saveStatus('status-1.json');

  // Two key holders sign, each offline: nothing reaches the server.
  const sa = await offline(['trust', 'sign-root', '--offline', '--key', a.key, '--in', st, '--out', file('sig-a.json'), '--json']);
  ok(sa, 'sign a');
  assert.deepEqual(sa.json.signed.map((s: { role: string; version: number }) => [s.role, s.version]), [['root', 1]]);
  assert.equal(sa.json.signed[0].signatures[0].signed, 1);
  assert.match(sa.json.next, /trust sign-root --signature .*sig-a\.json$/);
  const human = await offline(['trust', 'sign-root', '--offline', '--key', b.key, '--in', st, '--out', file('sig-b.json')]);
  ok(human, 'sign b');
  assert.match(human.stdout, /^signing:\n  root v1, expires /);
  assert.match(human.stdout, /signed root v1 with key [0-9a-f]{64}, offline: nothing was sent\n/);
  assert.match(human.stdout, /wrote .*sig-b\.json \(the signatures only; the key stays here\)\nnext: carry it to a connected machine and run: steward-control --server URL trust sign-root --signature .*sig-b\.json\n$/);
  const sig = JSON.parse(readFileSync(file('sig-b.json'), 'utf8'));
  assert.equal(sig.kind, 'steward-trust-signatures');
  assert.doesNotMatch(readFileSync(file('sig-b.json'), 'utf8'), /PRIVATE KEY/);
  assert.equal((await status()).pending.root.signatures[0].have, 0, 'nothing was sent');

  // Sent from the connected machine: the first leaves root v1 one short, the second publishes it
  // and puts the empty targets v1 pending.
  const first = await online(['trust', 'sign-root', '--signature', file('sig-a.json'), '--json']);
  ok(first, 'send a');
  assert.deepEqual([first.json.signed[0].role, first.json.signed[0].published, first.json.signed[0].thresholdsMet], ['root', false, false]);
  const second = await online(['trust', 'sign-root', '--signature', file('sig-b.json')]);
  ok(second, 'send b');
  assert.match(second.stdout, /^sent the signature of key [0-9a-f]{64} over root v1 \(made \S+Z\)\n  2 of 2 signatures of root v1's root keys .*\n  published root v1\nput the top-level targets v1 pending .*sign-root --offline.*\n$/);
  let s = await status();
  assert.deepEqual([s.root?.version, s.pending.targets?.version], [1, 1]);

  // Sent again: nothing pending for it, said so.
  const again = await online(['trust', 'sign-root', '--signature', file('sig-a.json'), '--json']);
  assert.deepEqual([again.code, again.json.error.code], [1, 'NOT_FOUND']);
  assert.match(again.json.error.message, /no root is pending on the server \(root v1 is published: its thresholds were met without this signature\)/);

  // targets v1 the same way.
  const st2 = await saveStatus('status-2.json');
  for (const k of [a, cc]) ok(await offline(['trust', 'sign-root', '--offline', '--key', k.key, '--in', st2, '--out', file(`sig-t-${k.name}.json`), '--json']), `sign targets ${k.name}`);
  for (const k of [a, cc]) ok(await online(['trust', 'sign-root', '--signature', file(`sig-t-${k.name}.json`), '--json']), `send targets ${k.name}`);
  s = await status();
  assert.deepEqual([s.targets?.version, s.repository], [1, true]);
});

test('a signature of a pending root replaced since it was signed is refused by name before anything is sent', async () => {
  ok(await online(['trust', 'rotate', '--expires-days', '300']), 'rotate');
  const st = await saveStatus('status-3.json');
  ok(await offline(['trust', 'sign-root', '--offline', '--key', a.key, '--in', st, '--out', file('sig-r2.json')]), 'sign root v2');
  ok(await online(['trust', 'rotate', '--expires-days', '200', '--replace']), 'rotate again');
  const r = await online(['trust', 'sign-root', '--signature', file('sig-r2.json'), '--json']);
  assert.deepEqual([r.code, r.json.error.code], [1, 'STATE_INVALID'], r.stdout);
  assert.match(r.json.error.message, /signed root v2 \(sha256 [0-9a-f]{16}…\), but the server's pending root is v2 \(sha256 [0-9a-f]{16}…\): it was replaced since; save the trust status again/);
  assert.equal((await status()).pending.root.signatures[0].have, 0, 'nothing was sent');
});

test('offline refusals: a key that may not sign, missing or wrong flags, an --out that exists, files that are not what they should be', async () => {
  const st = await saveStatus('status-4.json');
  const cases: Array<[string[], number, string, RegExp]> = [
    [['--offline', '--key', stranger.key, '--in', st, '--out', file('x1.json')], 3, 'FORBIDDEN', /key [0-9a-f]{64} \(.*stranger\.key\) may not sign what is pending \(root v2\)/],
    [['--offline', '--key', a.key, '--out', file('x2.json')], 2, 'USAGE', /--offline needs --in STATUS/],
    [['--offline', '--key', a.key, '--in', st, '--out', st], 2, 'USAGE', /--out .* exists; pass a new file/],
    [['--key', a.key, '--in', st, '--out', file('x3.json')], 2, 'USAGE', /--in and --out go with --offline/],
    [['--offline', '--key', a.key, '--in', a.pub, '--out', file('x4.json')], 2, 'USAGE', /--in .* is not JSON/],
    [['--offline', '--key', a.key, '--in', file('sig-a.json'), '--out', file('x5.json')], 2, 'USAGE', /is not a trust status: save one on a connected machine with `steward-control --server URL trust status --json > /],
    [['--signature', file('sig-a.json'), '--key', a.key], 2, 'USAGE', /--signature sends signatures made already: it takes no --key/],
    [['--signature', st], 2, 'USAGE', /is not a signature file of `trust sign-root --offline`/],
    [[], 2, 'USAGE', /sign-root needs --key PEM .* or --signature FILE/],
  ];
  for (const [args, code, err, why] of cases) {
    const r = await offline(['trust', 'sign-root', ...args, '--json']);
    assert.deepEqual([r.code, r.json?.error?.code], [code, err], `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.json.error.message, why, args.join(' '));
  }
  for (const n of ['x1', 'x2', 'x3', 'x4', 'x5']) assert.equal(existsSync(file(`${n}.json`)), false, `${n}: no file written`);
  // A signature file altered on its way (a forged time to reach the terminal) is refused.
  const forged = JSON.parse(readFileSync(file('sig-a.json'), 'utf8'));
  forged.signedAt = '2026-01-01T00:00:00Z\u001b[2J';
  writeFileSync(file('forged.json'), JSON.stringify(forged));
  const r = await online(['trust', 'sign-root', '--signature', file('forged.json'), '--json']);
  assert.deepEqual([r.code, r.json.error.code], [2, 'USAGE']);
});
