import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostPaths } from '../../src/core/paths.js';
import { holdFile, holdViewOf, readHoldFile } from '../../src/helper/holds/hold-file.js';
import { readAppState } from '../../src/helper/state/app-state.js';
import { agentctl, startHelper, type CliResult, type TestHost } from '../helpers/host.js';
import { explore, formatViolations, killProcessesUnder, stateWorkDir } from './explorer.js';
import { APP, beforeOf, crashHost, installVersions, releaseTrees, traceHelper } from './helper-scenario.js';
import { checkRecoveredRoot } from './invariants.js';
import { runHelperStart } from './run-start.js';
import { crashCap, crashSeed, requireStrace } from './settings.js';

// The host's own hold (docs/design.md §18) under a power cut: `agentctl hold --until` writes the
// expiry (state/<app>.hold.json) and then the hold (state/<app>.json), replacing the app's hold; the lift of an expired hold
// at the helper's start records it and then clears the hold. Every crash state of each, recovered
// by a helper's start, is a consistent host (the invariants of every scenario) whose hold is
// whole: the one asked with its expiry or the one the app had, never the one asked without its
// expiry; and a
// hold that expired is gone and its lift recorded.

const HOUR = 3_600_000;

// Traces `act` on a host with 1.0.0 installed (after `prepare`), explores its crash states, and
// checks each with the helper's start, the common invariants and `holdCheck`.
async function exploreHold(
  t: TestContext,
  name: string,
  prepare: (host: TestHost) => Promise<void>,
  act: (host: TestHost) => Promise<CliResult | void>,
  holdCheck: (root: string) => Promise<string[]>,
) {
  const host = crashHost();
  t.after(() => host.cleanup());
  await installVersions(host, ['1.0.0']);
  await prepare(host);
  const before = await beforeOf(host);
  const rec = await traceHelper(host, act);
  await releaseTrees(host, before.trees);
  const work = await stateWorkDir(host.scratch);
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const x = await explore(name, rec, work, async (root) => {
    const started = await runHelperStart(root);
    try {
      return [...(await checkRecoveredRoot(started, before)), ...(await holdCheck(root))];
    } finally {
      await started.close();
    }
  }, { cap: crashCap(), seed: crashSeed() });
  return { host, rec, x };
}

async function holdOf(root: string) {
  const paths = hostPaths(root);
  const file = await readHoldFile(paths, APP);
  return { view: holdViewOf((await readAppState(paths, APP)).hold, file), file };
}

test('every crash state of agentctl hold --until recovers to the hold with its expiry, or to the hold the app had', async (t) => {
  if (!requireStrace(t)) return;
  let asked: CliResult | void = undefined;
  // The hold the install over admin.sock put ("update to 1.0.0", no expiry), which the run replaces.
  let prior: Awaited<ReturnType<typeof holdOf>>['view'] = null;
  const { x } = await exploreHold(
    t,
    'agentctl hold --until',
    async (host) => {
      prior = (await holdOf(host.root)).view;
      assert.equal(prior?.until, null, 'the install held the app, without an expiry');
    },
    async (host) => (asked = await agentctl(host, ['hold', APP, '--reason', 'freeze', '--until', '1h', '--json'])),
    async (root) => {
      const { view } = await holdOf(root);
      if (JSON.stringify(view) === JSON.stringify(prior)) return [];
      if (view?.reason !== 'freeze') return [`a hold that is neither the one the app had nor the one asked: ${JSON.stringify(view)}`];
      return view.until === view.at + HOUR ? [] : [`the hold asked for an hour holds with until ${view.until} (at ${view.at})`];
    },
  );
  assert.equal((asked as CliResult | undefined)?.code, 0, 'the traced hold was put');
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});

test("every crash state of the start's lift of an expired hold recovers to no hold and the lift recorded", async (t) => {
  if (!requireStrace(t)) return;
  const { host, x } = await exploreHold(
    t,
    'lift of an expired hold at start',
    async (h) => {
      const helper = await startHelper(h);
      try {
        const r = await agentctl(h, ['hold', APP, '--reason', 'night', '--until', '1m', '--json']);
        assert.equal(r.code, 0, r.stderr);
      } finally {
        await helper.stop();
        await killProcessesUnder(h.root);
      }
      // As if the helper had been down past its until.
      const file = JSON.parse(readFileSync(holdFile(h.paths, APP), 'utf8'));
      file.expiry.until = Date.now() - 1000;
      writeFileSync(holdFile(h.paths, APP), JSON.stringify(file));
    },
    // The traced helper's start is the lift; nothing else is asked of it.
    async () => {},
    async (root) => {
      const { view, file } = await holdOf(root);
      const bad: string[] = [];
      if (view) bad.push(`the expired hold is still there: ${JSON.stringify(view)}`);
      if (file?.lifted?.how !== 'expired' || file.lifted.reason !== 'night') bad.push(`the lift is not recorded: ${JSON.stringify(file?.lifted ?? null)}`);
      return bad;
    },
  );
  const traced = await holdOf(host.root);
  assert.deepEqual([traced.view, traced.file?.lifted?.how], [null, 'expired'], 'the traced start lifted it');
  assert.ok(x.checked > 0);
  assert.equal(x.violations.length, 0, formatViolations(x));
});
