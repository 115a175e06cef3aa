import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, logIn, openPage, type RecordedPage } from '../helpers/browser.js';
import { startDashboardFleet } from '../helpers/dashboard-fleet.js';
import { nodesPin } from '../../src/control/operations/pin-ops.js';
import { targetSet } from '../../src/control/operations/target-ops.js';

// The dashboard's buttons that change something (the log-out button aside).
const ACTIONS = 'main [data-action], [data-section=preview] [data-action], details.start';

async function fill(p: RecordedPage, fields: Record<string, string>): Promise<void> {
  for (const [name, value] of Object.entries(fields)) await p.page.fill(`details.start input[name=${name}]`, value);
}

test('an operator sees the demo fleet, previews and starts a rollout, watches it advance as nodes confirm, pauses it, reads a target page and logs out; a viewer finds no buttons', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const fleet = await startDashboardFleet();
  t.after(() => fleet.close());

  const op = await openPage(browser);
  await logIn(op, fleet.adminUrl, fleet.operatorToken);
  const nodesText = await op.page.locator('table[data-table=fleet]').innerText();
  for (const name of ['staging-1', 'prod-1', 'prod-2', 'prod-3', 'prod-cache']) assert.ok(nodesText.includes(name), `the fleet table lists ${name}:\n${nodesText}`);
  assert.match(nodesText, /clock skew/);
  assert.equal(await op.page.locator('table[data-table=fleet] [data-skew]').count(), 5, "each node's clock skew, from its last heartbeat");
  assert.match(await op.page.locator('table[data-table=versions]').innerText(), /web\s+1\.0\.0\s+4/);
  assert.equal(await op.page.locator('.who').innerText(), 'otto (operator)');

  // The dry run first: it shows the plan and writes nothing.
  await op.page.click('header nav a[href="#rollouts"]');
  await op.page.locator('table[data-table=rollouts]').waitFor();
  await op.page.click('details.start summary');
  await fill(op, { app: 'web', version: '2.0.0', select: 'env=prod', canaries: '1', batch: '1', bake: '0' });
  assert.equal(await op.page.locator('[data-action=start]').isDisabled(), true, 'no start before a preview');
  await op.page.click('[data-action=preview]');
  const plan = await op.page.locator('[data-section=preview] table[data-table=plan]').innerText();
  assert.match(plan, /canary/);
  assert.match(plan, /batch 2/);
  assert.equal((await fleet.status('web')).version, '3.0.0', 'the dry run started nothing');
  await op.page.click('[data-action=start]');

  // The run's page follows it live: each beat confirms the issued node.
  await op.page.locator('main[data-page=rollout] [data-status=running]').waitFor();
  assert.equal((await fleet.status('web')).version, '2.0.0');
  assert.equal(await op.page.locator('main .progress').getAttribute('data-total'), '3');
  await fleet.beat(1);
  await op.page.locator('main .progress[data-confirmed="1"]').waitFor();
  await fleet.beat(1);
  await op.page.locator('main .progress[data-confirmed="2"]').waitFor();
  await op.page.click('main [data-action=pause]');
  await op.page.locator('main [data-status=paused]').waitFor();
  assert.equal((await fleet.status('web')).status, 'paused');
  await op.page.locator('main [data-action=resume]').waitFor();

  // The node of the failed 3.0.0: its reason and log file in plain view for an operator.
  const staging = fleet.byName('staging-1').fake.nodeId;
  await op.page.goto(`${fleet.adminUrl}/ui/#node/${staging}`);
  const failed = await op.page.locator('[data-section=failed-logs]').innerText();
  assert.match(failed, /REPLACEMENT_UNHEALTHY/);
  assert.match(failed, /EADDRINUSE/);
  assert.match(failed, /\/var\/log\/steward\/web-attempt\.log/);

  // A target's page (docs/design.md §18): each node it selects with its version and its one reason;
  // a pin's reason, a person's text, shown as text.
  await fleet.control.addRelease('cache', '1.3.0');
  await fleet.run(targetSet, { name: 'cache-prod', app: 'cache', version: '1.3.0', select: 'env=prod', canaries: '0', bake: '0' });
  await fleet.run(nodesPin, { nodeId: fleet.byName('prod-1').fake.nodeId, pin: 'cache=1.3.0', reason: '<b id=injected>INC-7</b>' });
  await op.page.click('header nav a[href="#targets"]');
  const targets = await op.page.locator('table[data-table=targets]').innerText();
  assert.match(targets, /cache-prod\s+cache\s+1\.3\.0\s+converging/);
  await op.page.click('table[data-table=targets] a[href="#target/cache-prod"]');
  const rows = await op.page.locator('table[data-table=target-nodes]').innerText();
  assert.match(rows, /prod-cache\s+1\.2\.0\s+behind\s+in-progress/, rows);
  assert.match(rows, /prod-2\s+-\s+behind\s+app-not-reported/, rows);
  assert.match(rows, /prod-1\s+-\s+behind\s+pinned/, rows);
  assert.match(rows, /<b id=injected>INC-7<\/b>/, 'the reason as text');
  assert.equal(await op.page.locator('#injected').count(), 0, 'never as markup');
  assert.doesNotMatch(rows, /staging-1/, 'a node the selector does not pick is not listed');

  await op.page.click('[data-action=logout]');
  await op.page.locator('form.login').waitFor();
  await op.page.reload();
  await op.page.locator('form.login').waitFor();

  // A viewer reads the same pages and finds nothing to press, nor the log lines.
  const viewer = await openPage(browser);
  await logIn(viewer, fleet.adminUrl, fleet.viewerToken);
  for (const where of ['#rollouts', '#rollout/web', `#node/${staging}`, '#targets', '#target/cache-prod', '#receipts', '#audit']) {
    await viewer.page.goto(`${fleet.adminUrl}/ui/${where}`);
    await viewer.page.locator('header .live:text-matches("updated")').waitFor();
    assert.equal(await viewer.page.locator(ACTIONS).count(), 0, `a viewer sees no button on ${where}`);
  }
  assert.equal(await viewer.page.locator('[data-section=failed-logs]').count(), 0);

  for (const p of [op, viewer]) {
    // Before a login, GET /ui/session answers 401: that is how the page learns it has no session.
    assert.deepEqual(p.errors.filter((e) => !/status of 401/.test(e) && !/^401 GET .*\/ui\/session$/.test(e)), [], 'no script error, no failed request');
  }
});
