// The dashboard shows more than each app's latest rollout: every run, newest first, a page at a
// time, and an app's earlier runs under its latest; a dry run names its nodes by hostname.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, logIn, openPage } from '../helpers/browser.js';
import { startDashboardFleet } from '../helpers/dashboard-fleet.js';

test('the rollouts page lists every run a page at a time, an app page its earlier runs, and a preview names nodes by hostname', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  // The demo's history: web 1.0.0 to staging (#1) and to prod (#2), then 3.0.0 halted (#3).
  const fleet = await startDashboardFleet();
  t.after(() => fleet.close());

  const op = await openPage(browser);
  await logIn(op, fleet.adminUrl, fleet.operatorToken);
  await op.page.goto(`${fleet.adminUrl}/ui/#rollouts?limit=2`);
  const firstPage = op.page.locator('main table[data-table=all-runs]');
  await firstPage.waitFor();
  const newest = await firstPage.innerText();
  assert.match(newest, /#3\s+web\s+3\.0\.0\s+halted/);
  assert.match(newest, /REPLACEMENT_UNHEALTHY/, "a halted run's reason");
  assert.match(newest, /#2\s+web\s+1\.0\.0\s+succeeded\s+env=prod/);
  assert.doesNotMatch(newest, /#1\s/, 'two runs a page');
  await op.page.click('main [data-pager=older]');
  await op.page.locator('main table[data-table=all-runs] >> text=env=staging').first().waitFor();
  const older = await op.page.locator('main table[data-table=all-runs]').innerText();
  assert.match(older, /#1\s+web\s+1\.0\.0\s+succeeded\s+env=staging/);
  assert.doesNotMatch(older, /#[23]\s/);
  assert.equal(await op.page.locator('main [data-pager=older]').count(), 0, 'the last page has no older one');
  await op.page.click('main [data-pager=newest]');
  await op.page.locator('main table[data-table=all-runs] >> text=#3').waitFor();

  // The app's page: its latest run (#3), then the earlier ones.
  await op.page.goto(`${fleet.adminUrl}/ui/#rollout/web`);
  await op.page.locator('main [data-run="3"]').waitFor();
  const earlier = await op.page.locator('main table[data-table=all-runs]').innerText();
  assert.match(earlier, /#2\s+web\s+1\.0\.0\s+succeeded/);
  assert.match(earlier, /#1\s+web\s+1\.0\.0\s+succeeded/);
  assert.doesNotMatch(earlier, /#3\s/, 'the latest is shown above, not again');

  // A dry run's batches and the nodes it leaves out, by hostname.
  await op.page.goto(`${fleet.adminUrl}/ui/#rollouts`);
  await op.page.click('details.start summary');
  for (const [name, value] of Object.entries({ app: 'web', version: '2.0.0', canaries: '1', batch: '1', bake: '0' })) await op.page.fill(`details.start input[name=${name}]`, value);
  await op.page.click('[data-action=preview]');
  const plan = await op.page.locator('[data-section=preview] table[data-table=plan]').innerText();
  for (const host of ['prod-1', 'prod-2', 'prod-3', 'staging-1']) assert.ok(plan.includes(host), `the plan names ${host}:\n${plan}`);
  const left = await op.page.locator('[data-section=preview] table[data-table=left-out]').innerText();
  assert.match(left, /prod-cache/, 'a node without the app, by hostname');
  assert.ok(left.includes(fleet.byName('prod-cache').fake.nodeId), 'and its node id');
  // Before a login, GET /ui/session answers 401: that is how the page learns it has no session.
  assert.deepEqual(op.errors.filter((e) => !/status of 401/.test(e) && !/^401 GET .*\/ui\/session$/.test(e)), [], 'no script error, no failed request');
});
