import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { stateFile } from '../../src/core/paths.js';
import { holdFile } from '../../src/helper/holds/hold-file.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type HelperProcess } from '../helpers/host.js';
import { appStatus } from '../helpers/app-processes.js';

// `agentctl hold APP --reason R [--until DURATION]` against a real helper (docs/design.md §18):
// the hold with its expiry in status and --json, kept across a helper restart, lifted by the
// helper's own timer and at its start, and release-hold as before.

const host = useHost(after, { apps: { web: processApp(), api: processApp() } });
const HOUR = 3_600_000;
let helper: HelperProcess;

before(async () => {
  helper = await host.startHelper();
});

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

test('agentctl hold refuses a malformed or absurd --until, and an empty, overlong or control-character reason, with exit 2 and nothing held', { timeout: 60_000 }, async () => {
  for (const [args, why] of [
    [['--reason', 'freeze', '--until', '30'], /not a duration like 30m/],
    [['--reason', 'freeze', '--until', '4 h'], /not a duration/],
    [['--reason', 'freeze', '--until', '30s'], /not a duration/],
    [['--reason', 'freeze', '--until', '0m'], /shorter than a minute/],
    [['--reason', 'freeze', '--until', '400d'], /longer than 365 days/],
    [['--reason', ''], /empty/],
    [['--reason', '  '], /empty/],
    [['--reason', 'x'.repeat(257)], /longer than 256/],
    [['--reason', 'two\nlines'], /control character/],
    [['--reason', 'red \x1b[31m'], /control character/],
    [[], /--reason/],
  ] as const) {
    const r = await agentctl(host, ['hold', 'web', ...args, '--json']);
    assert.equal(r.code, 2, `${JSON.stringify(args)}: ${r.stderr}${r.stdout}`);
    assert.match(r.stderr + r.stdout, why, JSON.stringify(args));
  }
  assert.equal((await appStatus(host, 'web')).hold, null);
});

test('hold is admin.sock only: over helper.sock (the agent, so the control plane) it is FORBIDDEN', { timeout: 60_000 }, async () => {
  const r = await agentctl(host, ['--socket', host.paths.helperSock, 'hold', 'web', '--reason', 'freeze', '--json']);
  assert.equal(r.json?.error?.code, 'FORBIDDEN', r.stderr + r.stdout);
  assert.equal((await appStatus(host, 'web')).hold, null);
});

test('agentctl hold --until puts a hold that status shows with its reason and until, and that survives a helper restart', { timeout: 60_000 }, async () => {
  const r = await agentctl(host, ['hold', 'web', '--reason', 'change freeze for the audit', '--until', '2h', '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const h = r.json.hold;
  assert.equal(h.reason, 'change freeze for the audit');
  assert.match(h.by, /over admin\.sock$/);
  assert.equal(h.until, h.at + 2 * HOUR);
  assert.equal(r.json.replaced, null);
  assert.deepEqual((await appStatus(host, 'web')).hold, h);

  const human = await agentctl(host, ['status', 'web']);
  assert.match(human.stdout, new RegExp(`held by .* since ${iso(h.at)} \\(change freeze for the audit\\), until ${iso(h.until)}`));
  const check = await agentctl(host, ['status', '--check']);
  assert.equal(check.code, 3, 'held: exit 3 for monitoring');
  assert.match(check.stderr, /web: held by .*until /);
  const plain = await agentctl(host, ['hold', 'api', '--reason', 'vendor asked']);
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /api held by .* \(vendor asked\), until release-hold/);

  await helper.stop();
  helper = await host.startHelper();
  assert.deepEqual((await appStatus(host, 'web')).hold, h, 'the same hold, the same until');
  assert.equal((await appStatus(host, 'api')).hold.until, null);
});

test("the helper's timer lifts a hold at its until and records it", { timeout: 60_000 }, async () => {
  // Bring web's expiry near (as if it were put long ago), then any hold or release makes the helper look.
  const file = JSON.parse(readFileSync(holdFile(host.paths, 'web'), 'utf8'));
  const until = Date.now() + 1500;
  file.expiry.until = until;
  writeFileSync(holdFile(host.paths, 'web'), JSON.stringify(file));
  const rel = await agentctl(host, ['release-hold', 'api', '--json']);
  assert.deepEqual([rel.code, rel.json.released, rel.json.hold.reason], [0, true, 'vendor asked']);
  let web = await appStatus(host, 'web');
  for (let i = 0; i < 200 && web.hold; i++) {
    await new Promise((r) => setTimeout(r, 50));
    web = await appStatus(host, 'web');
  }
  assert.equal(web.hold, null, 'lifted by the helper');
  assert.equal(web.holdLifted.how, 'expired');
  assert.equal(web.holdLifted.until, until);
  assert.ok(web.holdLifted.liftedAt >= until);
  assert.equal(JSON.parse(readFileSync(stateFile(host.paths, 'web'), 'utf8')).hold, null);
  const api = await appStatus(host, 'api');
  assert.deepEqual([api.hold, api.holdLifted.how], [null, 'released']);
  assert.match(api.holdLifted.releasedBy, /over admin\.sock$/);
});

test('a hold that expired while the helper was down is lifted at its start and recorded', { timeout: 60_000 }, async () => {
  const r = await agentctl(host, ['hold', 'web', '--reason', 'night', '--until', '1h', '--json']);
  assert.equal(r.code, 0, r.stderr);
  await helper.stop();
  const file = JSON.parse(readFileSync(holdFile(host.paths, 'web'), 'utf8'));
  file.expiry.until = Date.now() - 60_000;
  writeFileSync(holdFile(host.paths, 'web'), JSON.stringify(file));
  helper = await host.startHelper();
  const web = await appStatus(host, 'web');
  assert.equal(web.hold, null);
  assert.deepEqual([web.holdLifted.how, web.holdLifted.reason, web.holdLifted.until], ['expired', 'night', file.expiry.until]);
});
