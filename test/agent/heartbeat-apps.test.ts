import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { heartbeatApps } from '../../src/agent/heartbeat-apps.js';
import { hostConfigSchema } from '../../src/core/config-schema.js';
import { hostPaths } from '../../src/core/paths.js';
import { readStatus } from '../../src/helper/ops/status.js';
import type { AppStatus } from '../../src/protocol/answers.js';

function app(over: Partial<AppStatus>): AppStatus {
  return {
    name: 'web', runner: 'process', current: '1.0.0', currentState: 'valid', previous: null, highestActive: '1.0.0', hold: null, blocked: null,
    quarantined: [], running: null, lastAttempt: null, supervisor: null, ...over,
  } as AppStatus;
}

const sup = (over: Record<string, unknown>) =>
  ({ expected: 'running', state: 'running', pid: 42, version: '1.0.0', attempts: 0, nextAttemptAt: null, lastExit: null, giveUpReason: null, since: 5, ...over }) as AppStatus['supervisor'];

test('the helper status maps to heartbeat apps: hold and blocked as booleans, the supervisor as the agent reports it', () => {
  const { apps, skipped } = heartbeatApps([
    app({ name: 'web', previous: '0.9.0', supervisor: sup({}) }),
    app({ name: 'api', hold: { by: 'root', at: 1, reason: 'manual' } as never, supervisor: sup({ state: 'waiting', pid: null, attempts: 3, since: 9 }) }),
    app({ name: 'db', current: null, currentState: 'absent', blocked: { reason: 'x', message: 'y', since: 2 } as never }),
    app({ name: 'agent', runner: 'unit', unit: { name: 'steward-agent.service', activeState: 'active', subState: 'running', mainPid: 77, nRestarts: 2 } }),
    app({ name: 'gone', runner: 'unit', unit: { name: 'x.service', error: 'no systemd' } }),
    app({ name: 'bad', current: 'not-a-version' }),
  ]);
  assert.deepEqual(skipped, ['bad']);
  assert.deepEqual(apps, [
    { name: 'web', current: '1.0.0', previous: '0.9.0', held: false, blocked: false, supervisor: { state: 'running', pid: 42, attempts: 0, since: 5 } },
    // A helper from before hold expiries sends no `until`: the hold stands until release-hold.
    { name: 'api', current: '1.0.0', previous: null, held: true, blocked: false, hold: { by: 'root', reason: 'manual', at: 1, until: null }, supervisor: { state: 'waiting', attempts: 3, since: 9 } },
    { name: 'db', current: null, previous: null, held: false, blocked: true, supervisor: { state: 'stopped', attempts: 0, since: null } },
    { name: 'agent', current: '1.0.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', pid: 77, attempts: 2, since: null } },
    { name: 'gone', current: '1.0.0', previous: null, held: false, blocked: false, supervisor: { state: 'stopped', attempts: 0, since: null } },
  ]);
});

test("the helper's own app steward is reported as what runs: the helper's version and pid, running, never none/stopped", async (t) => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'steward-self-status-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  // A host that never updated itself: no `current` of steward, no supervisor record of it.
  const config = hostConfigSchema.parse({ apps: { steward: { runner: 'self' } } });
  const status = await readStatus({ paths: hostPaths(root), config, startedAt: 1234, recovering: false, running: () => undefined, blockedInMemory: new Map(), now: Date.now(), ownVersion: '0.1.0' });
  const s = status.apps[0]!;
  assert.deepEqual([s.current, s.self?.version, s.supervisor?.state, s.supervisor?.pid, s.supervisor?.since], [null, '0.1.0', 'running', process.pid, 1234]);
  const { apps } = heartbeatApps(status.apps);
  assert.deepEqual(apps, [
    { name: 'steward', current: '0.1.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', pid: process.pid, attempts: 0, since: 1234 }, self: { fallback: null, packageReverted: null } },
  ]);
});

test('an open watch window and the last exit go into heartbeat v4 only, and an odd exit never drops the app', async () => {
  const { appsForVersion } = await import('../../src/agent/heartbeat-apps.js');
  const watch = { attemptId: 'a1', version: '2.0.0', fromVersion: '1.0.0', until: 1_800_000_300_000, restarts: 1, maxRestarts: 2 };
  const { apps, skipped } = heartbeatApps([
    app({ name: 'web', current: '2.0.0', watch, supervisor: sup({ lastExit: { code: 3, signal: null } }) }),
    app({ name: 'api', supervisor: sup({ lastExit: { code: null, signal: 'SIGKILL' } }) }),
    app({ name: 'odd', supervisor: sup({ lastExit: { code: 2 ** 40, signal: 'sig"kill\n' } }) }),
  ]);
  assert.deepEqual(skipped, []);
  assert.deepEqual(apps[0]?.watch, { version: '2.0.0', until: 1_800_000_300_000, restarts: 1, maxRestarts: 2 });
  assert.deepEqual(apps.map((a) => a.lastExit), [{ code: 3, signal: null }, { code: null, signal: 'SIGKILL' }, { code: null, signal: null }]);
  for (const v of [1, 2, 3] as const) assert.ok(appsForVersion(apps, v).every((a) => !('watch' in a) && !('lastExit' in a)), `v${v} carries neither`);
  assert.deepEqual(appsForVersion(apps, 4), apps);
});

test("the last exit's reason and the restarts since activation go into heartbeat v5 only; v4 keeps the code and signal of that exit", async () => {
  const { appsForVersion } = await import('../../src/agent/heartbeat-apps.js');
  const { apps } = heartbeatApps([
    app({ name: 'web', supervisor: sup({ lastExit: { code: null, signal: 'SIGKILL', reason: 'OOM' }, restartsSinceActivation: 3 }) }),
    app({ name: 'api', supervisor: sup({ lastExit: { code: 1, signal: null, reason: 'made-up' as 'OOM' } }) }),
  ]);
  assert.deepEqual(apps.map((a) => a.lastExit), [{ code: null, signal: 'SIGKILL', reason: 'OOM' }, { code: 1, signal: null }], 'a reason steward does not know is dropped, not the app');
  assert.deepEqual(appsForVersion(apps, 5), apps);
  assert.deepEqual(apps.map((a) => a.restarts), [3, undefined]);
  assert.deepEqual(appsForVersion(apps, 4).map((a) => a.lastExit), [{ code: null, signal: 'SIGKILL' }, { code: 1, signal: null }]);
  assert.ok(appsForVersion(apps, 4).every((a) => !('restarts' in a)), 'v4 carries no restarts');
  const { heartbeatPayloadSchema } = await import('../../src/core/heartbeat-schema.js');
  const payload = (v: number, a: unknown[]) => ({ v, nodeId: 'n1', seq: 1, sentAt: 1_800_000_000_000, bootId: 'b', agentVersion: '0.1.0', apps: a, receipts: [] });
  const base = { name: 'web', current: '1.0.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: null } };
  const withReason = { ...base, lastExit: { code: null, signal: 'SIGKILL', reason: 'OOM' } };
  assert.equal(heartbeatPayloadSchema.safeParse(payload(5, [withReason])).success, true, JSON.stringify(heartbeatPayloadSchema.safeParse(payload(5, [withReason])).error?.issues));
  assert.equal(heartbeatPayloadSchema.safeParse(payload(4, [withReason])).success, false, 'a v4 heartbeat with a reason is refused');
  assert.equal(heartbeatPayloadSchema.safeParse(payload(5, [{ ...base, lastExit: { code: null, signal: 'SIGKILL', reason: 'NOPE' } }])).success, false);
});

test("the host's hold, who put it, why and until when, goes into heartbeat v6 only; below it the app says `held` alone", async () => {
  const { appsForVersion } = await import('../../src/agent/heartbeat-apps.js');
  const { heartbeatPayloadSchema } = await import('../../src/core/heartbeat-schema.js');
  const hold = { by: 'alice (uid 1001) over admin.sock', reason: 'change freeze', at: 1_800_000_000_000, until: 1_800_003_600_000 };
  const { apps, skipped } = heartbeatApps([
    app({ name: 'web', hold, supervisor: sup({}) }),
    app({ name: 'api', supervisor: sup({}) }),
    // Text a newer or damaged helper might send: escaped and cut, never the app dropped.
    app({ name: 'odd', hold: { by: 'x\u001b[2J', reason: 'r'.repeat(600) + '\n', at: 5, until: null }, supervisor: sup({}) }),
  ]);
  assert.deepEqual(skipped, []);
  assert.deepEqual(apps[0]?.hold, hold);
  assert.equal(apps[1]?.hold, undefined, 'no hold, no field');
  assert.equal(apps[2]?.hold?.reason.length, 512);
  assert.doesNotMatch(apps[2]?.hold?.by ?? '', /\u001b/);
  assert.deepEqual(appsForVersion(apps, 6), apps);
  for (const v of [1, 2, 3, 4, 5] as const) {
    const carried = appsForVersion(apps, v);
    assert.ok(carried.every((a) => !('hold' in a)), `v${v} carries no hold`);
    assert.deepEqual(carried.map((a) => a.held), [true, false, true], `v${v} keeps held`);
  }
  const payload = (v: number, a: unknown[]) => ({ v, nodeId: 'n1', seq: 1, sentAt: 1_800_000_000_000, bootId: 'b', agentVersion: '0.1.0', apps: a, receipts: [] });
  assert.ok(heartbeatPayloadSchema.safeParse(payload(6, apps)).success, 'v6 takes the hold');
  assert.ok(heartbeatPayloadSchema.safeParse(payload(5, appsForVersion(apps, 5))).success);
  assert.equal(heartbeatPayloadSchema.safeParse(payload(5, apps)).success, false, 'v5 with a hold is refused, as a control plane from before v6 would');
});
