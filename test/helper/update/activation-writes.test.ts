import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { supervisorFile } from '../../../src/core/paths.js';
import type { RunRecord } from '../../../src/core/run-record-schema.js';
import { activate } from '../../../src/helper/update/activate.js';
import type { UpdateContext } from '../../../src/helper/update/context.js';
import { makeFaultHost, type FaultHost } from '../../helpers/fault-host.js';

// The supervisor record is written as few times as the activation's guarantees need (issue 8,
// row 3): `stopped` before the old process is signalled, and the new process once it runs.
// The record of the stopped old process is not rewritten before the start replaces it.

function record(fh: FaultHost): RunRecord {
  return JSON.parse(readFileSync(supervisorFile(fh.paths, 'web'), 'utf8')) as RunRecord;
}

async function go(fh: FaultHost, ctx: UpdateContext, from: string | null, to: string, attemptId: string) {
  return activate(ctx, { app: 'web', attemptId, fromVersion: from, targetVersion: to, startedAt: ctx.clock.now(), progress: () => {} });
}

// A host with 1.0.0 and 2.0.0 staged and 1.0.0 active; removed after the test.
async function withOneActive(t: TestContext) {
  const fh = await makeFaultHost();
  t.after(() => fh.cleanup());
  const ctx = { ...fh.context(), probe: async () => ({ ok: true as const }) };
  await fh.stage(ctx, '1.0.0');
  await fh.stage(ctx, '2.0.0');
  assert.equal((await go(fh, ctx, null, '1.0.0', 'first')).journal.outcome, 'active');
  return { fh, ctx };
}

test('between the stop and the start the record says stopped and still names the old process; after the start it names the new one', async (t) => {
  const { fh, ctx } = await withOneActive(t);
  const before = record(fh);
  assert.equal(before.expected, 'running');
  assert.ok(before.process, 'the first install recorded its process');

  let atStart: RunRecord | null = null;
  fh.onStart = () => {
    atStart = record(fh);
  };
  const r = await go(fh, ctx, '1.0.0', '2.0.0', 'second');
  assert.equal(r.journal.outcome, 'active');
  const seen = atStart as RunRecord | null;
  assert.ok(seen, 'the unit was started');
  assert.equal(seen.expected, 'stopped', 'the record said stopped before the old process was signalled');
  assert.deepEqual(seen.process, before.process, 'the stop did not write the record a second time (that write cleared the process)');
  assert.equal(seen.version, '1.0.0');

  const after = record(fh);
  assert.equal(after.expected, 'running');
  assert.equal(after.version, '2.0.0');
  assert.equal(after.process?.pid, process.pid, "the new process is the fake unit's main pid");
});

test('a failed activation still ends with the record of the version it rolled back to, running', async (t) => {
  const { fh, ctx } = await withOneActive(t);
  fh.unhealthy.add('2.0.0');
  const r = await go(fh, ctx, '1.0.0', '2.0.0', 'second');
  assert.equal(r.journal.outcome, 'rolled-back');
  const after = record(fh);
  assert.equal(after.expected, 'running');
  assert.equal(after.version, '1.0.0');
  assert.equal(after.process?.pid, process.pid);
});
