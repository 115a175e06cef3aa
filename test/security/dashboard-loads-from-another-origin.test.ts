import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UI_CSP } from '../../src/control/admin/ui-files.js';
import { launchBrowser, logIn, openPage } from '../helpers/browser.js';
import { startDashboardFleet } from '../helpers/dashboard-fleet.js';

test('no page of the dashboard asks another origin for anything, and every file it loads carries the strict CSP, nosniff and its content type', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const fleet = await startDashboardFleet();
  t.after(() => fleet.close());
  const p = await openPage(browser);
  const files: Array<{ url: string; headers: Record<string, string> }> = [];
  p.page.on('response', (r) => {
    if (!new URL(r.url()).pathname.startsWith('/ui/api/') && r.request().method() === 'GET' && r.status() === 200) files.push({ url: r.url(), headers: r.headers() });
  });
  await logIn(p, fleet.adminUrl, fleet.operatorToken);
  const staging = fleet.byName('staging-1').fake.nodeId;
  for (const hash of ['#fleet', '#rollouts', '#rollout/web', `#node/${staging}`, '#receipts', '#audit']) {
    await p.page.goto(`${fleet.adminUrl}/ui/${hash}`);
    await p.page.locator('header .live:text-matches("updated")').waitFor();
  }
  const elsewhere = p.requests.filter((u) => new URL(u).origin !== fleet.adminUrl);
  assert.deepEqual(elsewhere, [], 'every request goes to the dashboard\'s own origin');
  const types = new Map(files.map((f) => [new URL(f.url).pathname.replace(/.*\./, '.'), f.headers['content-type']]));
  assert.equal(types.get('.js'), 'text/javascript; charset=utf-8');
  assert.equal(types.get('.css'), 'text/css; charset=utf-8');
  assert.ok(files.some((f) => f.url === `${fleet.adminUrl}/ui/` && f.headers['content-type'] === 'text/html; charset=utf-8'), 'the page itself was loaded');
  for (const f of files.filter((x) => new URL(x.url).pathname !== '/ui/session')) {
    assert.equal(f.headers['content-security-policy'], UI_CSP, f.url);
    assert.equal(f.headers['x-content-type-options'], 'nosniff', f.url);
  }
  assert.match(UI_CSP, /default-src 'self'/);
  assert.match(UI_CSP, /frame-ancestors 'none'/);
  assert.doesNotMatch(UI_CSP, /unsafe|\*|https?:|data:/, 'no inline code, eval, wildcard or other origin');
});
