// npm run screenshots: the README's pictures of the dashboard (docs/screenshots/*.png), taken
// from the browser tests' demo fleet, so they show what the code draws today. The rollout is
// caught mid-way: its canary confirmed, its first batch issued. The fleet has a TUF repository
// (docs/trust.md): the web hosts trust by it, prod-3 with a timestamp 3 h old (metadata-stale), and
// prod-cache by keys.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { rolloutStart } from '../../src/control/operations/rollout-ops.js';
import { logIn, openPage, startChromium } from '../helpers/browser.js';
import { startDashboardFleet } from '../helpers/dashboard-fleet.js';
import { REPO } from '../helpers/host.js';
import { seedRepository } from '../helpers/trust-admin.js';

export const SCREENSHOTS = ['fleet', 'rollout', 'node'] as const;

async function main(): Promise<void> {
  const out = path.join(REPO, 'docs/screenshots');
  mkdirSync(out, { recursive: true });
  const fleet = await startDashboardFleet();
  const browser = await startChromium();
  try {
    await seedRepository(fleet.control.store, fleet.control.clock.now());
    for (const n of fleet.nodes) n.trust = n.name === 'prod-cache' ? { scheme: 'keys' } : { scheme: 'tuf', rootVersion: 1, timestampVersion: 12, timestampAgeSeconds: n.name === 'prod-3' ? 3 * 3600 : 240 };
    await fleet.run(rolloutStart, { app: 'web', version: '2.0.0', select: 'env=prod', canaries: '1', batch: '1', bake: '10m', maxFailures: '1', verdictTimeout: '10m', seed: '7' });
    await fleet.beat(1);
    const p = await openPage(browser, { width: 1280, height: 720 });
    await logIn(p, fleet.adminUrl, fleet.operatorToken);
    const shoot = async (name: (typeof SCREENSHOTS)[number], hash: string, ready: string) => {
      await p.page.goto(`${fleet.adminUrl}/ui/${hash}`);
      await p.page.locator(ready).waitFor();
      await p.page.locator('header .live:text-matches("updated")').waitFor();
      await p.page.screenshot({ path: path.join(out, `${name}.png`), fullPage: true });
      process.stdout.write(`docs/screenshots/${name}.png\n`);
    };
    await shoot('fleet', '#fleet', 'table[data-table=fleet]');
    await shoot('rollout', '#rollout/web', 'table[data-table=run-nodes]');
    await shoot('node', `#node/${fleet.byName('staging-1').fake.nodeId}`, '[data-section=failed-logs]');
  } finally {
    await browser.close();
    await fleet.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`screenshots failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
