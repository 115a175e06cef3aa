import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StewardError } from '../../src/core/errors.js';
import { checkPackagedHelper } from '../../src/cli/package-check.js';
import { forgetPackageTrial } from '../../src/install/package-check.js';
import type { AppStatus, StatusResult } from '../../src/protocol/answers.js';
import { LauncherHost } from '../helpers/launcher-host.js';

// The postinst's last step (issue 31 item 1): which steward runs once the helper's restart is over.
// A package trial that reverted fails the configure step, naming both versions, so that dpkg's
// state says so; a reconfigure forgets the launcher's `package-tried` of that version.

function status(self: AppStatus['self'] | undefined, recovering = false): StatusResult {
  const steward = { name: 'steward', runner: 'self', current: null, currentState: 'absent', previous: null, highestActive: null, hold: null, blocked: null, quarantined: [], running: null, lastAttempt: null, supervisor: null, ...(self ? { self } : {}) } as AppStatus;
  return { root: '/', pid: 42, startedAt: 1, recovering, apps: [steward] };
}
const self = (version: string, decision: string, packageReverted: NonNullable<AppStatus['self']>['packageReverted'] = null): AppStatus['self'] => ({ version, decision, fallback: null, packageReverted, problems: [] });

// Deps answering `answers` in turn (an Error is thrown), on a clock that advances by each sleep.
function deps(answers: Array<StatusResult | Error>) {
  let now = 0;
  let i = 0;
  return {
    status: async () => {
      const a = answers[Math.min(i++, answers.length - 1)]!;
      if (a instanceof Error) throw a;
      return a;
    },
    sleep: async (ms: number) => {
      now += ms;
    },
    now: () => now,
    asked: () => i,
  };
}

test('the check waits for the helper to answer and recover (a trial recovers once it committed), then passes when it runs the package version or newer', async () => {
  // The helper that committed its trial goes on running as it was launched: `trial`.
  const d = deps([new Error('HELPER_UNREACHABLE'), status(self('1.1.0', 'trial'), true), status(self('1.1.0', 'trial'), true), status(self('1.1.0', 'trial'))]);
  assert.equal(await checkPackagedHelper('1.1.0', d), '1.1.0');
  assert.equal(d.asked(), 4, 'it waited for the trial to commit');
  assert.equal(await checkPackagedHelper('1.0.0', deps([status(self('2.0.0', 'current'))])), '2.0.0', 'a newer committed self-update runs: fine');
  const stuck = deps([new Error('HELPER_UNREACHABLE'), status(self('1.1.0', 'trial'), true)]);
  await assert.rejects(checkPackagedHelper('1.1.0', stuck, 10_000), (err: unknown) => err instanceof StewardError && err.code === 'HELPER_UNREACHABLE' && /runs 1\.1\.0 \(trial\) and is still recovering/.test(err.message));
});

test('a helper that runs an older steward than the package after its restart fails the check with REPLACEMENT_UNHEALTHY, naming both versions and the retry', async () => {
  const reverted = { code: 'REPLACEMENT_UNHEALTHY' as const, version: '1.1.0', message: "the package's steward 1.1.0 was tried and REVERTED: steward 1.0.5 runs; `dpkg --configure steward` tries it again" };
  await assert.rejects(
    checkPackagedHelper('1.1.0', deps([status(self('1.1.0', 'trial'), true), new Error('HELPER_UNREACHABLE'), status(self('1.0.5', 'current', reverted))])),
    (err: unknown) => err instanceof StewardError && err.code === 'REPLACEMENT_UNHEALTHY' && err.message.startsWith('steward 1.1.0: ') && err.message.includes('steward 1.0.5 runs') && err.message.includes('dpkg --configure steward'),
  );
  // A helper from before packageReverted says less, but the check still fails.
  await assert.rejects(checkPackagedHelper('1.1.0', deps([status(self('1.0.5', 'current'))])), /steward 1\.0\.5 runs, older than the package's 1\.1\.0/);
  assert.equal(await checkPackagedHelper('1.1.0', deps([status(undefined)])), 'unknown', 'a config without the app steward has nothing to compare');
});

test("the package's configure step forgets package-tried only when it names the package's version", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-package-check-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const h = new LauncherHost(dir, '1.1.0');
  const tried = path.join(h.selfDir, 'package-tried');
  assert.equal(await forgetPackageTrial(h.paths, '1.1.0'), false, 'none there');
  h.writeSelf('package-tried', '{"schemaVersion":1,"version":"1.0.9"}\n');
  assert.equal(await forgetPackageTrial(h.paths, '1.1.0'), false);
  assert.ok(existsSync(tried), "another version's is kept");
  h.writeSelf('package-tried', '{"schemaVersion":1,"version":"1.1.0"}\n');
  assert.equal(await forgetPackageTrial(h.paths, '1.1.0'), true);
  assert.ok(!existsSync(tried));
});
