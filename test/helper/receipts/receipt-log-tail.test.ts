// Which receipts carry the failed version's log lines (receipt payload v2, docs/design.md §12 and §16).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { receiptsFile } from '../../../src/core/paths.js';
import { receiptPayloadSchema } from '../../../src/core/receipt-schema.js';
import path from 'node:path';
import { loadOrCreateHelperKey } from '../../../src/host/helper-key.js';
import { LOG_TAIL_RECEIPTS_MAX, ReceiptStore, type ReceiptInput } from '../../../src/helper/receipts/receipt-store.js';
import { systemClock } from '../../../src/platform/clock.js';
import { useHost } from '../../helpers/host-fixture.js';
import type { TestHost } from '../../helpers/host.js';

async function storeFor(host: TestHost, o: { accepted?: readonly number[] | null; logTail?: boolean }): Promise<ReceiptStore> {
  const signer = await loadOrCreateHelperKey(host.paths);
  return new ReceiptStore({ paths: host.paths, clock: systemClock, signer, nodeId: async () => 'n-1', acceptedVersions: async () => o.accepted ?? null, logTail: () => o.logTail ?? true });
}

function failedLog(host: TestHost, attemptId: string, text: string): string {
  mkdirSync(host.paths.logDir, { recursive: true });
  const file = path.join(host.paths.logDir, `web-${attemptId}.log`);
  writeFileSync(file, text);
  return file;
}

const failure = (attemptId: string, logFile: string, extra: Partial<ReceiptInput> = {}): ReceiptInput => ({
  app: 'web', attemptId, fromVersion: '1.0.0', targetVersion: '2.0.0', integrity: null, outcome: 'rolled-back', startedAt: 1, updatedAt: 2,
  reason: { code: 'REPLACEMENT_UNHEALTHY', message: 'probe failed' }, logFile, ...extra,
});

test('a rolled-back receipt to a control plane that accepts v2 is v2 with the log tail', async (t) => {
  const host = useHost(t, { apps: {} });
  const store = await storeFor(host, { accepted: [1, 2] });
  const r = await store.emit(failure('a1', failedLog(host, 'a1', 'starting\nError: EADDRINUSE \u001b[31m:8080\n')));
  assert.equal(r.payload.v, 2);
  assert.equal(r.payload.logTail, 'starting\nError: EADDRINUSE \ufffd[31m:8080\n');
  const f = await store.emit(failure('a2', failedLog(host, 'a2', 'x'.repeat(50_000)), { outcome: 'failed' }));
  assert.equal(f.payload.v, 2);
  assert.ok(Buffer.byteLength(JSON.stringify(f.payload.logTail)) <= 8192);
});

test('v1 without a log tail: to a control plane that said nothing or only v1, with logTail off, for an active receipt, without a log file', async (t) => {
  const host = useHost(t, { apps: {} });
  const log = failedLog(host, 'b', 'boom\n');
  for (const [i, [o, extra]] of ([
    [{ accepted: null }, {}],
    [{ accepted: [1] }, {}],
    [{ accepted: [1, 4] }, {}],
    [{ accepted: [1, 2], logTail: false }, {}],
    [{ accepted: [1, 2] }, { outcome: 'active', reason: undefined }],
    [{ accepted: [1, 2] }, { logFile: undefined }],
  ] as const).entries()) {
    const store = await storeFor(host, o);
    const r = await store.emit(failure(`b${i}`, log, extra as Partial<ReceiptInput>));
    assert.equal(r.payload.v, 1, JSON.stringify(o));
    assert.equal(r.payload.logTail, undefined);
  }
});

test(`at most ${LOG_TAIL_RECEIPTS_MAX} receipts of one file carry a log tail: a run of failures keeps the file small`, async (t) => {
  const host = useHost(t, { apps: {} });
  // A relay mark at 0: every receipt is unrelayed and kept, so the file grows with the run.
  const signer = await loadOrCreateHelperKey(host.paths);
  const store = new ReceiptStore({ paths: host.paths, clock: systemClock, signer, nodeId: async () => 'n-1', acceptedVersions: async () => [1, 2], logTail: () => true, relayedSeq: async () => 0 });
  const log = failedLog(host, 'c', 'y'.repeat(20_000));
  const carried: boolean[] = [];
  for (let i = 0; i < LOG_TAIL_RECEIPTS_MAX + 5; i++) carried.push((await store.emit(failure(`c${i}`, log))).payload.logTail !== undefined);
  assert.deepEqual(carried, Array.from({ length: LOG_TAIL_RECEIPTS_MAX + 5 }, (_, i) => i < LOG_TAIL_RECEIPTS_MAX));
  const file = statSync(receiptsFile(host.paths, 'web')).size;
  assert.ok(file < 2 * 1024 * 1024, `the receipts file is ${file} bytes`);
});

test('a rollback by the watch window names its cause (v3) to a control plane that takes v3, and only in its message to one that does not', async (t) => {
  const host = useHost(t, { apps: {} });
  const log = failedLog(host, 'c', 'boom\n');
  const watched = (id: string) => failure(id, log, { reason: { code: 'UNHEALTHY_AFTER_ACTIVATION', message: 'it exited 3 times (activated by attempt r7-0123456789abcdef)' }, causeAttemptId: 'r7-0123456789abcdef' });
  const v3 = await (await storeFor(host, { accepted: [1, 2, 3] })).emit(watched('c1'));
  assert.deepEqual([v3.payload.v, v3.payload.causeAttemptId, v3.payload.logTail], [3, 'r7-0123456789abcdef', 'boom\n']);
  const v2 = await (await storeFor(host, { accepted: [1, 2] })).emit(watched('c2'));
  assert.deepEqual([v2.payload.v, v2.payload.causeAttemptId, v2.payload.logTail], [2, undefined, 'boom\n']);
  const v1 = await (await storeFor(host, { accepted: null })).emit(watched('c3'));
  assert.deepEqual([v1.payload.v, v1.payload.causeAttemptId], [1, undefined]);
  // A control plane that takes 1 and 3 but not 2 gets the log tail as v3.
  const odd = await (await storeFor(host, { accepted: [1, 3] })).emit(failure('c4', log));
  assert.deepEqual([odd.payload.v, odd.payload.logTail], [3, 'boom\n']);
  // The schema every reader uses: causeAttemptId only in v3.
  assert.equal(receiptPayloadSchema.safeParse({ ...v2.payload, causeAttemptId: 'r7-0123456789abcdef' }).success, false);
  assert.equal(receiptPayloadSchema.safeParse({ ...v3.payload }).success, true);
});
