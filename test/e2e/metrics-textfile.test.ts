// The helper's node_exporter textfile (docs/design.md §12, `metrics.textfile` in the host config) kept by
// a real steward-helper: written once the helper has started, rewritten as updates end and
// receipts are signed, accepted by `promtool check metrics`; and a textfile the helper may not
// write breaks no update (logged and counted, written again once the folder is fixed).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type HelperProcess } from '../helpers/host.js';
import { assertPromtoolPasses, valueOf } from '../helpers/prom-text.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

const web = processApp({ stopTimeoutMs: 1000 });
const host = useHost(after, { apps: { web } });
const folder = path.join(host.scratch, 'node-exporter');
const file = path.join(folder, 'steward.prom');
let port: number;
let helper: HelperProcess;

before(async () => {
  port = await freePort();
  mkdirSync(folder, { mode: 0o755 });
  host.writeConfig({ apps: { web }, metrics: { textfile: file } });
  helper = await host.startHelper();
});

// Waits until the textfile's text satisfies `ok` (the helper writes it after the change, on its
// own turn), and returns the text.
async function textfileWhen(ok: (text: string) => boolean, what: string): Promise<string> {
  const deadline = Date.now() + 20_000;
  let text = '';
  while (Date.now() < deadline) {
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      text = '';
    }
    if (text && ok(text)) return text;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the textfile never showed ${what}; last text:\n${text}`);
}

test('once the helper has started its textfile shows each app, and promtool accepts it', { timeout: 60_000 }, async (t) => {
  const text = await textfileWhen((s) => valueOf(s, 'steward_app_info', { app: 'web' }) !== undefined, 'the app web');
  assertPromtoolPasses(t, text);
  assert.equal(valueOf(text, 'steward_app_info', { app: 'web', version: 'none' }), 1);
  assert.equal(valueOf(text, 'steward_receipts_total', { outcome: 'active' }), 0);
  assert.equal(valueOf(text, 'steward_textfile_write_errors_total'), 0);
  assert.equal(statSync(file).mode & 0o777, 0o644, "readable by node_exporter's user");
});

test('an update rewrites the textfile: its version, its outcome, its receipt counted', { timeout: 60_000 }, async (t) => {
  const r = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port), '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const text = await textfileWhen(
    (s) => valueOf(s, 'steward_receipts_total', { outcome: 'active' }) === 1 && valueOf(s, 'steward_app_up', { app: 'web' }) === 1,
    'the receipt of 1.0.0 and web up',
  );
  assertPromtoolPasses(t, text);
  assert.equal(valueOf(text, 'steward_app_info', { app: 'web', version: '1.0.0' }), 1);
  assert.equal(valueOf(text, 'steward_app_info', { app: 'web', version: 'none' }), undefined);
  assert.equal(valueOf(text, 'steward_update_last_outcome', { app: 'web', outcome: 'active' }), 1);
  assert.equal(valueOf(text, 'steward_app_supervisor_state', { app: 'web', state: 'running' }), 1);
  assert.equal(valueOf(text, 'steward_app_held', { app: 'web' }), 1, 'an update by agentctl holds the app');
});

test('a textfile folder another user can write breaks no update: the write is refused, logged and counted', { timeout: 60_000 }, async (t) => {
  chmodSync(folder, 0o777);
  const r = await agentctl(host, ['update', 'web', '2.0.0', ...releaseArgs(host.scratch, 'web', '2.0.0', port), '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.equal(r.json.outcome, 'active');
  assert.equal(await fetchVersion(port), '2.0.0');
  const deadline = Date.now() + 20_000;
  while (!/metrics textfile .* not written: refusing to write into/.test(helper.stderr()) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
  assert.match(helper.stderr(), new RegExp(`metrics textfile ${file} not written: refusing to write into ${folder}: .*writable by group or others`));
  assert.equal(valueOf(readFileSync(file, 'utf8'), 'steward_app_info', { app: 'web', version: '1.0.0' }), 1, 'the file is as it was');

  // Once the folder is fixed, the next change writes it, with the refusals counted.
  chmodSync(folder, 0o755);
  const rel = await agentctl(host, ['release-hold', 'web', '--json']);
  assert.equal(rel.code, 0, rel.stderr + rel.stdout);
  const text = await textfileWhen((s) => valueOf(s, 'steward_app_held', { app: 'web' }) === 0, 'the hold released');
  assertPromtoolPasses(t, text);
  assert.equal(valueOf(text, 'steward_app_info', { app: 'web', version: '2.0.0' }), 1);
  assert.equal(valueOf(text, 'steward_receipts_total', { outcome: 'active' }), 2);
  assert.ok(valueOf(text, 'steward_textfile_write_errors_total')! >= 1, text);
});
