import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { emptyAppState } from '../../src/core/state-schemas.js';
import { writeAppState } from '../../src/helper/state/app-state.js';
import { callHelper } from '../../src/protocol/client.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';

// The attack: text a client chose (a hold's `by` or `reason`, or an error message quoting them)
// carries terminal escapes and newlines; `agentctl status` then clears the operator's screen or
// prints a forged line ("web held by root"). Requests refuse control characters, and agentctl
// escapes any that an older state file still holds.

// Every control character but the newline that ends a line.
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const EVIL = '\u001b[2J\u001b[H\u202eroot\nweb  runner  9.9.9';

const host = useHost(after, { apps: { web: processApp() } });
before(() => host.startHelper());

// `agentctl status`: the helper's line, the trust line (docs/design.md §21.3), the table's header and
// one line for `web`, nothing hidden.
async function statusLines(): Promise<string[]> {
  const r = await agentctl(host, ['status']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.doesNotMatch(r.stdout, CONTROL, JSON.stringify(r.stdout));
  const lines = r.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 4, JSON.stringify(r.stdout));
  assert.match(lines[1] ?? '', /^trust: keys /);
  return lines;
}

test('a stop over helper.sock whose `by` holds escapes and a newline is refused as a bad request', { timeout: 30_000 }, async () => {
  const err = (await callHelper(host.paths.helperSock, { v: 1, id: 1, op: 'stop', app: 'web', by: EVIL }).then(
    () => null,
    (e: unknown) => e,
  )) as { code?: string } | null;
  assert.equal(err?.code, 'BAD_REQUEST');
  await statusLines();
});

test('a hold with escapes in an older state file is shown escaped, on one line, by status and in a HELD refusal', { timeout: 30_000 }, async () => {
  await writeAppState(host.paths, 'web', { ...emptyAppState(), hold: { by: EVIL, reason: `stop${EVIL}`, at: Date.now() } });
  const lines = await statusLines();
  assert.match(lines[3] ?? '', /held by \\x1b\[2J\\x1b\[H\\u202eroot\\nweb {2}runner {2}9\.9\.9 since/);
  const r = await agentctl(host, ['--socket', host.paths.helperSock, 'start', 'web']);
  assert.equal(r.code, 3, r.stderr + r.stdout);
  assert.match(r.stderr, /HELD/);
  assert.doesNotMatch(r.stderr, CONTROL, JSON.stringify(r.stderr));
  const json = await agentctl(host, ['status', '--json']);
  assert.equal(json.json.apps[0].hold.by, EVIL, '--json keeps the text as it is (JSON escapes it)');
});
