import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { receiptsFile } from '../../../src/core/paths.js';
import { relayMarkFile } from '../../../src/core/relay-mark.js';
import type { StewardError } from '../../../src/core/errors.js';
import { loadOrCreateHelperKey } from '../../../src/host/helper-key.js';
import { readRelayedSeq } from '../../../src/helper/receipts/read-relay-mark.js';
import { RECEIPTS_FILE_MAX, RECEIPTS_KEPT, ReceiptStore, trimReceipts, UNRELAYED_MAX, type ReceiptInput, type StoredReceipt } from '../../../src/helper/receipts/receipt-store.js';
import type { ReceiptPayload } from '../../../src/core/receipt-schema.js';
import { systemClock } from '../../../src/platform/clock.js';
import { DOMAINS, signEnvelope } from '../../../src/platform/keys.js';
import { IS_ROOT, makeHost, type TestHost } from '../../helpers/host.js';

// The helper keeps every receipt above the agent's relay mark (issue 15); these hold the store's
// rules one by one. The flood over a real helper.sock is test/security/refused-receipt-flood-before-relay.

async function withHost(fn: (host: TestHost) => Promise<void>): Promise<void> {
  const host = makeHost({ apps: {} });
  try {
    await fn(host);
  } finally {
    host.cleanup();
  }
}

function payload(seq: number, over: Partial<ReceiptPayload> = {}): ReceiptPayload {
  return { v: 1, nodeId: 'n-1', app: 'web', attemptId: `a-${seq}`, seq, fromVersion: null, targetVersion: null, integrity: null, outcome: 'refused', startedAt: 1, updatedAt: 2, reason: { code: 'BUSY', message: 'busy' }, ...over };
}
const stored = (seqs: number[]): StoredReceipt[] => seqs.map((seq) => ({ payload: payload(seq), envelope: { payload: 'cA==', sig: 'cw==', keyId: '0123456789abcdef' } }));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const seqsOf = (rs: StoredReceipt[]) => rs.map((r) => r.payload.seq);

test('without a relay mark the newest 64 are kept (and the last transaction); with one, every receipt above it as well', () => {
  const all = stored(range(1, 200));
  const pin = { attemptId: 'a-3', seq: 3 };
  assert.deepEqual(seqsOf(trimReceipts(all, pin).kept), [3, ...range(138, 200)]);
  assert.deepEqual(seqsOf(trimReceipts(all, null).kept), range(137, 200));
  const { kept, dropped } = trimReceipts(all, pin, 20);
  assert.deepEqual(seqsOf(kept), [3, ...range(21, 200)]);
  assert.deepEqual(seqsOf(dropped), [1, 2, ...range(4, 20)]);
  assert.equal(trimReceipts(all, pin, 200).kept.length, RECEIPTS_KEPT, 'all relayed: back to the newest 64');
});

test('a receipts file never holds more than RECEIPTS_FILE_MAX: past it the oldest unrelayed go, never the last transaction', () => {
  const all = stored(range(1, RECEIPTS_FILE_MAX + 10));
  const { kept, dropped } = trimReceipts(all, { attemptId: 'a-1', seq: 1 }, 0);
  assert.equal(kept.length, RECEIPTS_FILE_MAX);
  assert.deepEqual(seqsOf(kept).slice(0, 2), [1, 12]);
  assert.deepEqual(seqsOf(dropped), range(2, 11));
});

// A receipts file of web holding `count` refusals, as the store writes it, seqs 1..count.
async function seedReceipts(host: TestHost, count: number): Promise<void> {
  const key = await loadOrCreateHelperKey(host.paths);
  const receipts = range(1, count).map((seq) => signEnvelope(DOMAINS.receipt, payload(seq), key.privateKey));
  mkdirSync(host.paths.receiptsDir, { recursive: true });
  mkdirSync(host.paths.stateDir, { recursive: true });
  writeFileSync(receiptsFile(host.paths, 'web'), JSON.stringify({ schemaVersion: 1, app: 'web', lastTransaction: null, receipts }));
  writeFileSync(host.paths.receiptSeq, JSON.stringify({ schemaVersion: 1, next: count + 1 }));
}

async function storeWithMark(host: TestHost, mark: { seq: number | null }): Promise<ReceiptStore> {
  const signer = await loadOrCreateHelperKey(host.paths);
  return new ReceiptStore({ paths: host.paths, clock: systemClock, signer, nodeId: async () => 'n-1', relayedSeq: async () => mark.seq });
}

const input = (attemptId: string, over: Partial<ReceiptInput> = {}): ReceiptInput => ({
  app: 'web', attemptId, fromVersion: null, targetVersion: null, integrity: null, outcome: 'refused', startedAt: 1, updatedAt: 2, reason: { code: 'HELD', message: 'held' }, ...over,
});
const fileSeqs = (host: TestHost): number[] =>
  JSON.parse(readFileSync(receiptsFile(host.paths, 'web'), 'utf8')).receipts.map((e: { payload: string }) => JSON.parse(Buffer.from(e.payload, 'base64').toString()).seq);

test('at UNRELAYED_MAX unrelayed receipts a refusal is RECEIPTS_UNRELAYED and writes nothing; an attempt that changed things still gets its receipt', () =>
  withHost(async (host) => {
    await seedReceipts(host, UNRELAYED_MAX);
    const mark = { seq: 0 as number | null };
    const store = await storeWithMark(host, mark);
    const before = readFileSync(receiptsFile(host.paths, 'web'), 'utf8');
    await assert.rejects(store.emit(input('one-more')), (e: StewardError) => e.code === 'RECEIPTS_UNRELAYED' && /768 receipts \(seqs 1 to 768\)/.test(e.message));
    assert.equal(readFileSync(receiptsFile(host.paths, 'web'), 'utf8'), before, 'nothing written');
    assert.deepEqual(JSON.parse(readFileSync(host.paths.receiptSeq, 'utf8')).next, UNRELAYED_MAX + 1, 'no seq spent');
    await assert.rejects(store.checkRoom('web'), (e: StewardError) => e.code === 'RECEIPTS_UNRELAYED');

    const active = await store.emit(input('journal-1', { outcome: 'active', targetVersion: '1.0.0', reason: undefined }));
    assert.equal(active.payload.seq, UNRELAYED_MAX + 1);
    assert.deepEqual(fileSeqs(host), range(1, UNRELAYED_MAX + 1), 'nothing unrelayed dropped');

    // The agent relays up to 700: room again, and what it relayed leaves the file.
    mark.seq = 700;
    await store.checkRoom('web');
    const refused = await store.emit(input('after'));
    assert.equal(refused.payload.seq, UNRELAYED_MAX + 2);
    assert.deepEqual(fileSeqs(host), range(701, UNRELAYED_MAX + 2));
  }));

test('without a relay mark (no agent publishes one) nothing is held back: the newest 64 stay and refusals always get receipts', () =>
  withHost(async (host) => {
    await seedReceipts(host, UNRELAYED_MAX);
    const store = await storeWithMark(host, { seq: null });
    await store.checkRoom('web');
    assert.equal((await store.emit(input('legacy'))).payload.seq, UNRELAYED_MAX + 1);
    assert.deepEqual(fileSeqs(host), range(UNRELAYED_MAX + 2 - RECEIPTS_KEPT, UNRELAYED_MAX + 1));
  }));

test('a relay mark above every seq signed is bounded to them: the receipts still to come count as unrelayed', () =>
  withHost(async (host) => {
    const mark = { seq: Number.MAX_SAFE_INTEGER as number | null };
    const store = await storeWithMark(host, mark);
    for (let i = 0; i < 70; i++) await store.emit(input(`r-${i}`));
    assert.equal(fileSeqs(host).length, RECEIPTS_KEPT, 'a mark past everything is "all relayed", no more');
  }));

// The relay mark as the helper reads it: the agent's user writes this file, root reads it.
async function markHost(host: TestHost, body: string | null): Promise<string> {
  const key = await loadOrCreateHelperKey(host.paths);
  mkdirSync(host.paths.agentDir, { recursive: true, mode: 0o700 });
  if (body !== null) writeFileSync(relayMarkFile(host.paths), body.replace('KEY', key.keyId));
  return key.keyId;
}

test('the relay mark: absent is null; a valid one its seq; anything else 0, every receipt unrelayed', () =>
  withHost(async (host) => {
    const keyId = await markHost(host, null);
    assert.equal(await readRelayedSeq(host.paths, keyId), null);
    const cases: Array<[string, number]> = [
      ['{"schemaVersion":1,"helperKeyId":"KEY","relayedSeq":41}', 41],
      ['{"schemaVersion":1,"helperKeyId":"0123456789abcdef","relayedSeq":41}', 0],
      ['{"schemaVersion":2,"helperKeyId":"KEY","relayedSeq":41}', 0],
      ['{"schemaVersion":1,"helperKeyId":"KEY","relayedSeq":-1}', 0],
      ['{"schemaVersion":1,"helperKeyId":"KEY","relayedSeq":9007199254740992}', 0],
      ['not json', 0],
      ['x'.repeat(5000), 0],
    ];
    for (const [body, want] of cases) {
      await markHost(host, body);
      assert.equal(await readRelayedSeq(host.paths, keyId), want, body.slice(0, 80));
    }
  }));

test('a relay mark that is a symlink, a FIFO or another owner\'s file is not read as one', () =>
  withHost(async (host) => {
    const keyId = await markHost(host, null);
    const file = relayMarkFile(host.paths);
    const target = path.join(host.scratch, 'mark.json');
    writeFileSync(target, `{"schemaVersion":1,"helperKeyId":"${keyId}","relayedSeq":9}`);
    symlinkSync(target, file);
    assert.equal(await readRelayedSeq(host.paths, keyId), 0, 'symlink');
    execFileSync('rm', [file]);
    execFileSync('mkfifo', [file]);
    assert.equal(await readRelayedSeq(host.paths, keyId), 0, 'FIFO (and no hang)');
    execFileSync('rm', [file]);
    if (IS_ROOT) {
      writeFileSync(file, `{"schemaVersion":1,"helperKeyId":"${keyId}","relayedSeq":9}`);
      assert.equal(await readRelayedSeq(host.paths, keyId), 9);
      chownSync(file, 65534, 65534);
      assert.equal(await readRelayedSeq(host.paths, keyId), 0, 'not the agent folder owner\'s');
    }
  }));
