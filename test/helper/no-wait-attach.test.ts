import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runTransaction, type TransactionCore } from '../../src/helper/ops/run-transaction.js';
import type { OpContext } from '../../src/helper/server/api-server.js';
import { Attempts } from '../../src/helper/update/attempts.js';
import type { UpdateAnswer } from '../../src/protocol/schemas.js';

// A request with noWait that names a running attempt is answered `accepted` once that attempt
// is durable, not when it ends. The agent relies on it: when it re-sends the attemptId of an
// update of steward-agent itself, the attempt stops the agent's unit, which waits for the agent.

const ctx: OpContext = { kind: 'helper', id: 1, progress: () => {}, upload: null, uploadSize: 0, closed: new AbortController().signal, peer: async () => ({ ok: false as const, why: 'a test without a socket' }) };

test('noWait on a running, accepted attempt answers accepted while the attempt still runs', async () => {
  const attempts = new Attempts<UpdateAnswer>();
  // Only the attach path is taken: a live attempt is looked up before anything else is read.
  const core = { attempts } as unknown as TransactionCore;
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => (finish = resolve));
  let ended = false;
  const entry = attempts.start('cp-attempt-1', 'steward-agent', async (_progress, accept) => {
    accept();
    await gate;
    ended = true;
    return { attemptId: 'cp-attempt-1', app: 'steward-agent', outcome: 'active' } as unknown as UpdateAnswer;
  });
  const answer = await runTransaction(core, { op: 'update', app: 'steward-agent', attemptId: 'cp-attempt-1', targetVersion: '1.0.1', noWait: true }, ctx, async () => {
    throw new Error('a second attempt must not start');
  });
  assert.deepEqual(answer, { attemptId: 'cp-attempt-1', app: 'steward-agent', accepted: true });
  assert.equal(ended, false, 'answered before the attempt ended');
  finish();
  await entry.done;
  // Without noWait the same attach waits for the end (the behaviour noWait changes).
  let finish2!: () => void;
  const gate2 = new Promise<void>((resolve) => (finish2 = resolve));
  attempts.start('cp-attempt-2', 'steward-agent', async (_p, accept) => {
    accept();
    await gate2;
    return { attemptId: 'cp-attempt-2', app: 'steward-agent', outcome: 'active' } as unknown as UpdateAnswer;
  });
  let settled = false;
  const waiting = runTransaction(core, { op: 'update', app: 'steward-agent', attemptId: 'cp-attempt-2', targetVersion: '1.0.1' }, ctx, async () => {
    throw new Error('a second attempt must not start');
  }).then((a) => ((settled = true), a));
  await new Promise((r) => setImmediate(r));
  assert.equal(settled, false);
  finish2();
  assert.equal(((await waiting) as { outcome: string }).outcome, 'active');
});
