// The dashboard in a real browser shows what a node says of an app after its activation
// (docs/design.md §17, heartbeat v5): an open watch window with its exits, the last exit's reason and
// the restarts since activation, on the fleet page and on the node's own page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, logIn, openPage } from '../helpers/browser.js';
import { startDashboardFleet } from '../helpers/dashboard-fleet.js';

test("the fleet and the node page show an app's open watch window, its last exit's reason and its restarts since activation", async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const fleet = await startDashboardFleet({ extra: [{ hostname: 'watched-1', labels: { env: 'prod' }, apps: [['web', '2.0.0']] }] });
  t.after(() => fleet.close());
  const node = fleet.byName('watched-1').fake;
  const until = fleet.control.clock.now() + 120_000;
  node.apps = node.apps.map((a) =>
    a.name === 'web'
      ? { ...a, previous: '1.0.0', watch: { version: '2.0.0', until, restarts: 1, maxRestarts: 2 }, lastExit: { code: null, signal: 'SIGKILL', reason: 'OOM' }, restarts: 3 }
      : a,
  );
  const answer = await node.heartbeat({ v: 5 });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));

  const p = await openPage(browser);
  await logIn(p, fleet.adminUrl, fleet.viewerToken);
  const row = p.page.locator('table[data-table=fleet] tr', { hasText: 'watched-1' });
  const text = await row.innerText();
  assert.match(text, /watching 1\/2/i);
  assert.match(text, /OOM/);
  const others = await p.page.locator('table[data-table=fleet] tr', { hasNotText: 'watched-1' }).allInnerTexts();
  assert.ok(others.every((r) => !/watching|OOM/i.test(r)), others.join('\n'));

  await row.locator('a.host').click();
  const apps = p.page.locator('main[data-page=node] table[data-table=apps]');
  await apps.waitFor();
  const web = await apps.locator('tr', { hasText: 'web' }).innerText();
  assert.match(web, /OOM: signal SIGKILL/);
  assert.match(web, /2\.0\.0 until \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(1 of 2 exits\)/);
  assert.match(web, /\b3\b/, 'the restarts since activation');
});
