import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rolloutStart } from '../../src/control/operations/rollout-ops.js';
import type { HeartbeatPayload } from '../../src/core/heartbeat-schema.js';
import { launchBrowser, logIn, openPage } from '../helpers/browser.js';
import { startDashboardFleet } from '../helpers/dashboard-fleet.js';

// Strings a node sends that would run, or load `x`, if any page put them in as HTML.
const IMG = `<img src=x onerror="window.__pwned='img'">`;
const SCRIPT = `<script>window.__pwned='script'</script>`;
const HOSTNAME = `${IMG}evil`;
const REASON_CODE = SCRIPT;
const REASON = `${IMG}${SCRIPT}\n<b>second line</b>`;
const LOG_FILE = `/var/log/steward/${IMG}.log`;
const VERSION = `1.0.0${IMG}`;
const APP = `<svg onload="window.__pwned='svg'">`;

test("a node's hostname, versions, app names, receipt reason and log file that hold markup and script show as text and run nothing", async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const fleet = await startDashboardFleet({ extra: [{ hostname: 'evil-node', labels: { env: 'evil' }, apps: [['web', '1.0.0']] }] });
  t.after(() => fleet.close());
  const evil = fleet.byName('evil-node');
  // Enrollment refuses a host name that is not RFC 1123 (test/security/hostname-with-markup-at-
  // enrollment); a node enrolled before that rule may still hold one, and it must show as text.
  fleet.control.store.db.prepare('UPDATE nodes SET hostname = ? WHERE nodeId = ?').run(HOSTNAME, evil.fake.nodeId);
  // Its receipt (signed, verified, stored as sent) carries the reason and the log file.
  evil.answer = () => ({ outcome: 'rolled-back', reason: { code: REASON_CODE, message: REASON }, logFile: LOG_FILE });
  await fleet.run(rolloutStart, { app: 'web', version: '2.0.0', select: 'env=evil', bake: '0' });
  assert.equal(await fleet.settle('web'), 'halted');
  // The heartbeat check refuses such versions and app names; a store that holds them anyway
  // (written by another version, or past a check with a hole) must still show them as text.
  const hb = evil.fake.payload({ agentVersion: VERSION, apps: [{ name: APP, current: VERSION, previous: VERSION, held: true, blocked: false, supervisor: { state: 'error', attempts: 3, since: null } }] }) as unknown as HeartbeatPayload;
  await fleet.control.store.write((tx) => tx.nodes.recordHeartbeat(hb, fleet.control.clock.now()));

  const p = await openPage(browser);
  await logIn(p, fleet.adminUrl, fleet.operatorToken);
  const pages: Array<[string, string, string[]]> = [
    ['#fleet', 'table[data-table=fleet]', [HOSTNAME, VERSION, APP]],
    [`#node/${evil.fake.nodeId}`, '[data-section=failed-logs]', [HOSTNAME, VERSION, APP, REASON_CODE, LOG_FILE, ...REASON.split('\n')]],
    ['#rollout/web', 'table[data-table=run-nodes]', [HOSTNAME, REASON_CODE]],
    ['#receipts', 'table[data-table=receipts]', [REASON_CODE, ...REASON.split('\n')]],
  ];
  for (const [hash, ready, shown] of pages) {
    await p.page.goto(`${fleet.adminUrl}/ui/${hash}`);
    await p.page.locator(ready).waitFor();
    // The page may be drawn again meanwhile (the hash change restarts it): read until it settles.
    let text = '';
    for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
      text = await p.page.locator('main').innerText();
      if (shown.every((s) => text.includes(s))) break;
    }
    for (const s of shown) assert.ok(text.includes(s), `${hash} shows ${JSON.stringify(s)} as text:\n${text}`);
    assert.equal(await p.page.evaluate('window.__pwned'), undefined, `nothing ran on ${hash}`);
    assert.equal(await p.page.evaluate('document.querySelectorAll("main img, main script, main svg, main b").length'), 0, `${hash} made no element of a node's string`);
  }
  const loadedX = p.requests.filter((u) => new URL(u).pathname.endsWith('/x'));
  assert.deepEqual(loadedX, [], 'no <img src=x> was ever loaded');
});
