// The dashboard in a real browser shows a node whose heartbeats are refused for clock skew: its
// skew and since when, and a clock-skew flag, on the fleet and on its own page; its stale flag
// follows the server's rule (3 heartbeat intervals, 1 s each here), not a fixed 3 minutes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, logIn, openPage } from '../helpers/browser.js';
import { startDashboardFleet } from '../helpers/dashboard-fleet.js';

test('the fleet and the node page show a node refused for clock skew with its skew, since when and its flags, and stale after 3 heartbeat intervals', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const fleet = await startDashboardFleet({ extra: [{ hostname: 'skewed-1', labels: { env: 'prod' }, apps: [['web', '1.0.0']] }] });
  t.after(() => fleet.close());
  const clock = fleet.control.clock;
  const skewed = fleet.byName('skewed-1').fake;
  // Four intervals of 1 s on, every node heartbeats but the skewed one, whose heartbeat is refused.
  clock.advance(4_000);
  for (const n of fleet.nodes) if (n.fake !== skewed) assert.equal((await n.fake.heartbeat()).status, 200);
  const refusedAt = clock.now();
  const refused = await skewed.heartbeat({ sentAt: refusedAt + 8 * 60_000 });
  assert.equal(refused.status, 422);

  const p = await openPage(browser);
  await logIn(p, fleet.adminUrl, fleet.viewerToken);
  const row = p.page.locator('table[data-table=fleet] tr', { hasText: 'skewed-1' });
  const text = await row.innerText();
  assert.match(text, /\+8 min refused heartbeats since \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ/);
  assert.equal(await row.locator('[data-skew-refused-since]').getAttribute('data-skew-refused-since'), String(refusedAt));
  assert.match(text, /clock-skew/i);
  assert.match(text, /stale/i, 'silent for 4 s: 4 intervals of 1 s');
  const others = await p.page.locator('table[data-table=fleet] tr', { hasNotText: 'skewed-1' }).allInnerTexts();
  assert.ok(others.every((r) => !/stale|clock-skew|refused/i.test(r)), others.join('\n'));

  await row.locator('a.host').click();
  const facts = p.page.locator('main[data-page=node] table').first();
  await facts.waitFor();
  assert.match(await facts.innerText(), /\+8 min refused heartbeats since/);
});
