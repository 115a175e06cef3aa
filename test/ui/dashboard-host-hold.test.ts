// The dashboard in a real browser shows the host's own hold as a node reports it (docs/design.md §18,
// heartbeat v6): who holds the app, why and until when, on the node's page and in the fleet page's
// `held` flag; a node that reports `held` alone (an older agent) shows `held`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, logIn, openPage } from '../helpers/browser.js';
import { startDashboardFleet } from '../helpers/dashboard-fleet.js';

test("the node page and the fleet's held flag show who holds an app, why and until when", async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const fleet = await startDashboardFleet({ extra: [{ hostname: 'frozen-1', labels: { env: 'prod' }, apps: [['web', '2.0.0']] }] });
  t.after(() => fleet.close());
  const node = fleet.byName('frozen-1').fake;
  const at = fleet.control.clock.now();
  const hold = { by: 'alice (uid 1001) over admin.sock', reason: '<b>change freeze</b>', at, until: at + 7_200_000 };
  node.apps = node.apps.map((a) => (a.name === 'web' ? ({ ...a, held: true, hold } as typeof a) : a));
  const answer = await node.heartbeat({ v: 6 });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));

  const p = await openPage(browser);
  await logIn(p, fleet.adminUrl, fleet.viewerToken);
  const row = p.page.locator('table[data-table=fleet] tr', { hasText: 'frozen-1' });
  const title = await row.locator('[title*="Held by alice"]').first().getAttribute('title');
  assert.match(title ?? '', /Held by alice \(uid 1001\) over admin\.sock since .*: <b>change freeze<\/b>; until \d{4}-/);

  await row.locator('a.host').click();
  const apps = p.page.locator('main[data-page=node] table[data-table=apps]');
  await apps.waitFor();
  const web = await apps.locator('tr', { hasText: 'web' }).innerText();
  assert.match(web, /alice \(uid 1001\) over admin\.sock since \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ: <b>change freeze<\/b>; until \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ/, 'the reason is text, never markup');
  assert.equal(await apps.locator('b').count(), 0, 'no element made from the reason');
});
