// The dashboard in a real browser shows how each node's host trusts releases (heartbeat v8,
// docs/design.md §21.2) in the words of the CLI's TRUST column: `keys`, `tuf r3`, `tuf r3 stale`,
// `-` for an older agent, on the fleet and on the node's page, and the fleet's tally (on tuf, on
// keys, metadata-stale). A report the page cannot vouch for (an unknown scheme holding markup, a
// root version that is huge, negative, fractional or a string) shows `?` or no version, never its text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, logIn, openPage } from '../helpers/browser.js';
import { startDashboardFleet } from '../helpers/dashboard-fleet.js';
import { seedRepository } from '../helpers/trust-admin.js';

const FRESH = { scheme: 'tuf', rootVersion: 3, timestampVersion: 41, timestampAgeSeconds: 300 };
const OLD = { scheme: 'tuf', rootVersion: 3, timestampVersion: 9, timestampAgeSeconds: 3 * 3600 };

test("the fleet and the node page show each node's trust as the CLI words it, and the fleet's tally", async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const fleet = await startDashboardFleet({
    extra: [
      { hostname: 'tuf-fresh', labels: { env: 'prod' }, apps: [['web', '1.0.0']], trust: FRESH },
      { hostname: 'tuf-old', labels: { env: 'prod' }, apps: [['web', '1.0.0']], trust: OLD },
      { hostname: 'tuf-new', labels: { env: 'prod' }, apps: [['web', '1.0.0']], trust: { scheme: 'tuf' } },
      { hostname: 'keys-1', labels: { env: 'prod' }, apps: [['web', '1.0.0']], trust: { scheme: 'keys' } },
    ],
  });
  t.after(() => fleet.close());
  // With a repository, a tuf host whose timestamp is over 2 h old, or that has none, is metadata-stale.
  await seedRepository(fleet.control.store, fleet.control.clock.now());
  await fleet.beat();

  const p = await openPage(browser);
  await logIn(p, fleet.adminUrl, fleet.viewerToken);
  const cell = async (host: string) => {
    const row = p.page.locator('table[data-table=fleet] tr', { hasText: host });
    const marked = row.locator('[data-trust]');
    return (await marked.count()) ? await marked.getAttribute('data-trust') : '-';
  };
  assert.deepEqual(
    await Promise.all(['tuf-fresh', 'tuf-old', 'tuf-new', 'keys-1', 'prod-1'].map(cell)),
    ['tuf r3', 'tuf r3 stale', 'tuf stale', 'keys', '-'],
  );
  const old = p.page.locator('table[data-table=fleet] tr', { hasText: 'tuf-old' });
  assert.match(await old.innerText(), /tuf r3 stale/);
  assert.match((await old.locator('[data-trust]').getAttribute('title')) ?? '', /root version 3; timestamp version 9, 3 h old at its report; metadata-stale/);

  // The tally: 3 on tuf, 1 on keys, the demo's 5 older agents; 2 metadata-stale.
  assert.equal(await p.page.locator('[data-section=trust-tally]').innerText(), '3 on tuf, 1 on keys, 5 not reporting (agents before heartbeat v8); 2 metadata-stale');
  const rows = await p.page.locator('table[data-table=trust] tbody tr').allInnerTexts();
  assert.deepEqual(rows.map((r) => r.split('\t').map((c) => c.trim())), [
    ['tuf r3', '2', '1'],
    ['tuf', '1', '1'],
    ['keys', '1', '0'],
    ['-', '5', '0'],
  ]);

  await old.locator('a.host').click();
  const facts = p.page.locator('main[data-page=node] table').first();
  await facts.waitFor();
  assert.equal(await facts.locator('[data-trust]').getAttribute('data-trust'), 'tuf r3 stale');
});

test('a trust report holding markup, or a root version that is not a positive whole number, shows as `?` or no version and runs nothing', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const fleet = await startDashboardFleet({ extra: [1, 2, 3, 4, 5, 6].map((i) => ({ hostname: `odd-${i}`, labels: { env: 'odd' }, apps: [['web', '1.0.0']] as Array<[string, string | null]>, trust: { scheme: 'keys' } })) });
  t.after(() => fleet.close());
  // The server checks a heartbeat's report and reads back only a valid one; the page still reads
  // the nodes' answer as it comes (a server of another version, a proxy): rewritten in flight here.
  const IMG = `<img src=x onerror="window.__pwned='img'">`;
  const odd: Record<string, unknown> = {
    'odd-1': { scheme: IMG, rootVersion: 3, at: 0 },
    'odd-2': { scheme: 'tuf', rootVersion: 1e300, timestampVersion: IMG, timestampAgeSeconds: -5, at: 0 },
    'odd-3': { scheme: 'tuf', rootVersion: -1, at: 0 },
    'odd-4': { scheme: 'tuf', rootVersion: `3${IMG}`, at: 0 },
    'odd-5': { scheme: 'tuf', rootVersion: 2.5, at: 0 },
    'odd-6': `tuf r9${IMG}`,
  };
  const p = await openPage(browser);
  await p.page.route(/\/ui\/api\/nodes(\?|$)/, async (route) => {
    const res = await route.fetch();
    const body = (await res.json()) as { nodes: Array<{ hostname: string; trust: unknown; metadataStale: unknown }> };
    for (const n of body.nodes) {
      if (n.hostname in odd) {
        n.trust = odd[n.hostname];
        n.metadataStale = n.hostname === 'odd-3' ? true : IMG;
      }
    }
    await route.fulfill({ response: res, json: body });
  });
  await logIn(p, fleet.adminUrl, fleet.operatorToken);
  const cells: string[] = [];
  for (const host of Object.keys(odd)) {
    const marked = p.page.locator('table[data-table=fleet] tr', { hasText: host }).locator('[data-trust]');
    cells.push((await marked.count()) ? ((await marked.getAttribute('data-trust')) ?? '') : '-');
  }
  assert.deepEqual(cells, ['?', 'tuf', 'tuf stale', 'tuf', 'tuf', '-']);
  const main = await p.page.locator('main').innerText();
  assert.ok(!main.includes('<img') && !main.includes('1e+300') && !main.includes('r-1') && !main.includes('2.5'), main);
  assert.equal(await p.page.evaluate('window.__pwned'), undefined, 'nothing ran');
  assert.equal(await p.page.evaluate('document.querySelectorAll("main img").length'), 0, 'no element made of a report');
  const titles = await p.page.locator('main [data-trust]').evaluateAll((es) => es.map((e) => e.getAttribute('title') ?? ''));
  assert.ok(titles.every((x) => !x.includes('<img') && !x.includes('-5 s')), titles.join('\n'));
  assert.equal(await p.page.locator('[data-section=trust-tally]').innerText(), '4 on tuf, 0 on keys, 1 on an unknown scheme, 6 not reporting (agents before heartbeat v8); 1 metadata-stale');
  assert.deepEqual(p.requests.filter((u) => new URL(u).pathname.endsWith('/x')), [], 'no <img src=x> was loaded');
});
