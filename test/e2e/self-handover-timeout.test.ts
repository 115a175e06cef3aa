// A self-update's handover whose restart never comes (docs/design.md §14, step 1; docs/self-update.md):
// the old helper wrote `candidate`, asked systemd for a restart (here a command that does
// nothing), and holds every app lock. After `handoverTimeoutMs` it withdraws: `candidate` goes,
// the journal closes `failed` (HANDOVER_TIMEOUT) with a receipt, and the apps are free again.
// When the launcher took `candidate` first (renamed it to `trying`), the trial owns the attempt:
// the old helper writes no outcome, and the attempt ends in one receipt, the trial's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, renameSync } from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { agentctl, processApp } from '../helpers/host.js';
import { freePort, releaseArgs } from '../fixtures/app-releases.js';
import { cleanedUpAfter, exited, makeSelfHost, ranVersions, startLauncher, stewardRelease, waitReady, type SelfHost } from '../helpers/self-host.js';
import { skipUnlessCI } from '../helpers/skip.js';

const IS_ROOT = process.getuid?.() === 0;
const { children, hosts } = cleanedUpAfter();

// Long enough for the second case to take `candidate` before it, on a loaded machine.
const TIMEOUT_MS = 10_000;

// A host with the app web running and a helper whose handover's restart does nothing, the
// update of steward to 2.0.0 accepted; returns the helper and the attempt.
async function handedOver(): Promise<{ h: SelfHost; old: ChildProcess; attemptId: string }> {
  const h = await makeSelfHost('1.0.0', { apps: { steward: { runner: 'self', stableMs: 300, handoverTimeoutMs: TIMEOUT_MS }, web: processApp() }, supervisor: { processRunner: 'detached' } });
  hosts.push(h);
  const old = startLauncher(h, { STEWARD_SELF_RESTART_COMMAND: JSON.stringify(['/bin/true']) });
  children.push(old);
  await waitReady(h, old);
  const web = await agentctl(h, ['update', 'web', '1.0.0', ...releaseArgs(h.scratch, 'web', '1.0.0', await freePort()), '--json']);
  assert.equal(web.json?.outcome, 'active', web.stdout + web.stderr);
  const rel = await stewardRelease(h, '2.0.0', 'good');
  const up = await agentctl(h, ['update', 'steward', '2.0.0', '--file', rel.tgz, '--manifest', rel.manifest, '--json']);
  assert.equal(up.json?.accepted, true, up.stdout + up.stderr);
  // Accepted once the journal is written; `candidate` follows.
  await waitFor('candidate', async () => existsSync(path.join(h.paths.selfDir, 'candidate')));
  return { h, old, attemptId: up.json.attemptId as string };
}

async function receiptsOf(h: SelfHost, attemptId: string): Promise<any[]> {
  const r = await agentctl(h, ['receipts', 'steward', '--json']);
  return ((r.json?.receipts ?? r.json) as any[]).map((x) => x.payload ?? x).filter((p) => p.attemptId === attemptId);
}

async function waitFor<T>(what: string, check: () => Promise<T | null | undefined | false>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a handover whose restart never comes is withdrawn: candidate removed, journal failed HANDOVER_TIMEOUT with a receipt, the apps free again', { timeout: 120_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the process app runs as nobody');
  const { h, old, attemptId } = await handedOver();
  // Held meanwhile: the helper is being replaced.
  assert.match((await agentctl(h, ['restart', 'web', '--json'])).stdout, /HANDOVER/);
  const [receipt] = await waitFor('the receipt of the withdrawn handover', async () => (await receiptsOf(h, attemptId)).length > 0 && receiptsOf(h, attemptId));
  assert.deepEqual([receipt.outcome, receipt.reason?.code, receipt.fromVersion, receipt.targetVersion], ['failed', 'HANDOVER_TIMEOUT', '1.0.0', '2.0.0']);
  assert.match(receipt.reason.message, new RegExp(`systemd did not restart steward-helper\\.service within ${TIMEOUT_MS} ms`));
  assert.equal(existsSync(path.join(h.paths.selfDir, 'candidate')), false);
  const s = await agentctl(h, ['status', '--json']);
  const steward = s.json.apps.find((a: any) => a.name === 'steward');
  assert.deepEqual([steward.lastAttempt?.outcome, steward.lastAttempt?.reason?.code, steward.running], ['failed', 'HANDOVER_TIMEOUT', null]);
  const web = await agentctl(h, ['restart', 'web', '--json']);
  assert.equal(web.code, 0, web.stdout + web.stderr);
  assert.equal(old.exitCode, null, 'the old helper runs on');
  // Its next start runs the old version: no trial, and no second outcome for the attempt.
  old.kill('SIGTERM');
  assert.equal(await exited(old), 0);
  const next = startLauncher(h);
  children.push(next);
  await waitReady(h, next);
  assert.deepEqual(ranVersions(h), ['1.0.0', '1.0.0']);
  assert.equal((await receiptsOf(h, attemptId)).length, 1);
  await agentctl(h, ['stop', 'web']);
  next.kill('SIGTERM');
  await exited(next);
});

test("a handover whose candidate the launcher took just before the timeout gets one outcome, the trial's", { timeout: 120_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the process app runs as nobody');
  const { h, old, attemptId } = await handedOver();
  // The launcher's rename at a start that came late: the candidate is on trial from now on.
  renameSync(path.join(h.paths.selfDir, 'candidate'), path.join(h.paths.selfDir, 'trying'));
  // The apps are freed at the timeout, without an outcome of the old helper's.
  await waitFor('the apps freed', async () => (await agentctl(h, ['restart', 'web', '--json'])).code === 0);
  assert.deepEqual(await receiptsOf(h, attemptId), []);
  const s = await agentctl(h, ['status', 'steward', '--json']);
  assert.equal(s.json.apps[0].lastAttempt?.outcome, 'activating');
  // The trial never got ready (the old helper held helper.lock): the next start reverts it.
  old.kill('SIGTERM');
  await exited(old);
  const next = startLauncher(h);
  children.push(next);
  await waitReady(h, next);
  const rs = await receiptsOf(h, attemptId);
  assert.deepEqual(rs.map((p) => [p.outcome, p.reason?.code]), [['rolled-back', 'REPLACEMENT_UNHEALTHY']]);
  await agentctl(h, ['stop', 'web']);
  next.kill('SIGTERM');
  await exited(next);
});
