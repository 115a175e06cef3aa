import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { receiptsFile } from '../../../src/core/paths.js';
import { loadOrCreateHelperKey } from '../../../src/host/helper-key.js';
import { readNodeId } from '../../../src/host/node-id.js';
import { ReceiptStore, type ReceiptInput } from '../../../src/helper/receipts/receipt-store.js';
import { verifyReceipt } from '../../../src/platform/verify-receipt.js';
import { DOMAINS, generateKeyPair, openEnvelope, parsePrivateKey, parsePublicKey, signEnvelope } from '../../../src/platform/keys.js';
import { systemClock } from '../../../src/platform/clock.js';
import { IS_ROOT, makeHost, type TestHost } from '../../helpers/host.js';

const INTEGRITY = 'sha512-' + 'A'.repeat(86) + '==';

async function withHost(fn: (host: TestHost) => Promise<void>): Promise<void> {
  const host = makeHost({ apps: {} });
  try {
    await fn(host);
  } finally {
    host.cleanup();
  }
}

async function storeFor(host: TestHost, extra: { groupFile?: string } = {}): Promise<ReceiptStore> {
  const signer = await loadOrCreateHelperKey(host.paths);
  return new ReceiptStore({ paths: host.paths, clock: systemClock, signer, nodeId: () => readNodeId(host.paths), ...extra });
}

function input(app: string, attemptId: string, extra: Partial<ReceiptInput> = {}): ReceiptInput {
  return { app, attemptId, fromVersion: '1.0.0', targetVersion: '1.1.0', integrity: INTEGRITY, outcome: 'active', startedAt: 1000, updatedAt: 2000, ...extra };
}

const refused = (app: string, attemptId: string) =>
  input(app, attemptId, { outcome: 'refused', fromVersion: null, targetVersion: null, integrity: null, reason: { code: 'BUSY', message: 'busy' } });

function readFile(host: TestHost, app: string): { lastTransaction: { attemptId: string; seq: number } | null; receipts: { payload: string }[] } {
  return JSON.parse(readFileSync(receiptsFile(host.paths, app), 'utf8'));
}

function fileSeqs(host: TestHost, app: string): number[] {
  return readFile(host, app).receipts.map((e) => JSON.parse(Buffer.from(e.payload, 'base64').toString()).seq);
}

const seqFile = (host: TestHost) => JSON.parse(readFileSync(host.paths.receiptSeq, 'utf8'));

test('receipt seqs start at 1 and increase by one, and the payload carries the nodeId once enrolled', () =>
  withHost(async (host) => {
    const store = await storeFor(host);
    const a = await store.emit(input('web', 'a1'));
    assert.equal(a.payload.seq, 1);
    assert.equal(a.payload.nodeId, null, 'no nodeId before enrollment');
    mkdirSync(host.paths.stateDir, { recursive: true });
    writeFileSync(host.paths.nodeState, JSON.stringify({ schemaVersion: 1, nodeId: 'node-7' }));
    const b = await store.emit(input('api', 'b1', { outcome: 'rolled-back', reason: { code: 'REPLACEMENT_UNHEALTHY', message: 'x'.repeat(3000) } }));
    assert.equal(b.payload.seq, 2);
    assert.equal(b.payload.nodeId, 'node-7');
    assert.ok(Buffer.byteLength(b.payload.reason?.message ?? '') <= 512, 'the reason message is cut to 512 bytes');
    assert.deepEqual(seqFile(host), { schemaVersion: 1, next: 3 });
    assert.deepEqual((await store.list()).map((r) => [r.payload.app, r.payload.seq]), [['web', 1], ['api', 2]]);
    assert.equal((await store.find('api', 'b1'))?.envelope.sig, b.envelope.sig);
    assert.equal(await store.find('api', 'nope'), null);
  }));

test('a second emit for the same attempt returns the first receipt and writes nothing', () =>
  withHost(async (host) => {
    const store = await storeFor(host);
    const first = await store.emit(input('web', 'same'));
    const before = readFileSync(receiptsFile(host.paths, 'web'));
    const mtime = lstatSync(receiptsFile(host.paths, 'web')).mtimeMs;
    const again = await store.emit(input('web', 'same', { outcome: 'failed' }));
    assert.deepEqual(again, first);
    assert.deepEqual(readFileSync(receiptsFile(host.paths, 'web')), before);
    assert.equal(lstatSync(receiptsFile(host.paths, 'web')).mtimeMs, mtime);
    assert.deepEqual(seqFile(host), { schemaVersion: 1, next: 2 });
    const fresh = await storeFor(host);
    assert.deepEqual(await fresh.emit(input('web', 'same')), first, 'also for a new helper process');
  }));

test('40 receipts of two apps emitted at once get seqs 1..40 once each, in file order', () =>
  withHost(async (host) => {
    const store = await storeFor(host);
    const jobs: Promise<unknown>[] = [];
    for (let i = 0; i < 20; i++) for (const app of ['web', 'api']) jobs.push(store.emit(input(app, `${app}-${i}`)));
    await Promise.all(jobs);
    const all = [...fileSeqs(host, 'web'), ...fileSeqs(host, 'api')].sort((a, b) => a - b);
    assert.deepEqual(all, Array.from({ length: 40 }, (_, i) => i + 1));
    for (const app of ['web', 'api']) {
      const seqs = fileSeqs(host, app);
      assert.equal(seqs.length, 20);
      assert.ok(seqs.every((s, i) => i === 0 || s > (seqs[i - 1] as number)), `${app} seqs increase in file order: ${seqs}`);
      // The nth request of an app was written nth: seqs follow the order of the calls.
      const ids = readFile(host, app).receipts.map((e) => JSON.parse(Buffer.from(e.payload, 'base64').toString()).attemptId);
      assert.deepEqual(ids, Array.from({ length: 20 }, (_, i) => `${app}-${i}`));
    }
    assert.deepEqual(seqFile(host), { schemaVersion: 1, next: 41 });
  }));

test('a receipts file keeps the last 64 receipts and never drops the last transaction for 100 later refusals', () =>
  withHost(async (host) => {
    const store = await storeFor(host);
    const tx = await store.emit(input('web', 'the-update'));
    for (let i = 0; i < 100; i++) await store.emit(refused('web', `r${i}`));
    const f = readFile(host, 'web');
    assert.equal(f.receipts.length, 64);
    assert.deepEqual(f.lastTransaction, { attemptId: 'the-update', seq: tx.payload.seq });
    const seqs = fileSeqs(host, 'web');
    assert.deepEqual(seqs, [1, ...Array.from({ length: 63 }, (_, i) => 39 + i)]);
    assert.deepEqual(await store.find('web', 'the-update'), tx);
    await store.emit(input('web', 'next-update'));
    const g = readFile(host, 'web');
    assert.equal(g.receipts.length, 64);
    assert.deepEqual(g.lastTransaction, { attemptId: 'next-update', seq: 102 });
    assert.deepEqual(fileSeqs(host, 'web'), Array.from({ length: 64 }, (_, i) => 39 + i), 'the old transaction ages out once replaced');
  }));

test('a receipt-seq.json left behind by a crash after the receipts write never reuses a seq', () =>
  withHost(async (host) => {
    const first = await storeFor(host);
    for (let i = 0; i < 3; i++) await first.emit(input('web', `w${i}`));
    // The crash: receipts/web.json holds seq 3, receipt-seq.json still says 3.
    writeFileSync(host.paths.receiptSeq, JSON.stringify({ schemaVersion: 1, next: 3 }));
    const after = await storeFor(host);
    assert.equal((await after.emit(input('api', 'a0'))).payload.seq, 4);
    assert.deepEqual(seqFile(host), { schemaVersion: 1, next: 5 });
  }));

test('a seq file ahead of every receipt is honoured, and a missing one is rebuilt from the receipts', () =>
  withHost(async (host) => {
    const store = await storeFor(host);
    await store.emit(input('web', 'w0'));
    writeFileSync(host.paths.receiptSeq, JSON.stringify({ schemaVersion: 1, next: 90 }));
    assert.equal((await (await storeFor(host)).emit(input('web', 'w1'))).payload.seq, 90);
    writeFileSync(host.paths.receiptSeq, '');
    await assert.rejects((await storeFor(host)).emit(input('web', 'w2')), { code: 'STATE_INVALID' });
    const { rmSync } = await import('node:fs');
    rmSync(host.paths.receiptSeq);
    assert.equal((await (await storeFor(host)).emit(input('web', 'w2'))).payload.seq, 91);
  }));

for (const [what, body] of [
  ['a newer schemaVersion', JSON.stringify({ schemaVersion: 2, app: 'web', lastTransaction: null, receipts: [] })],
  ['garbage', '{"schemaVersion": 1, "app": "web", "lastTr'],
] as const) {
  test(`a receipts file with ${what} is refused with STATE_INVALID naming it, and nothing is written`, () =>
    withHost(async (host) => {
      const store = await storeFor(host);
      await store.emit(input('api', 'a0'));
      const file = receiptsFile(host.paths, 'web');
      writeFileSync(file, body);
      const seqBefore = readFileSync(host.paths.receiptSeq, 'utf8');
      await assert.rejects(store.emit(input('web', 'w0')), (err: Error & { code?: string }) => err.code === 'STATE_INVALID' && err.message.includes(file));
      await assert.rejects(store.find('web', 'w0'), { code: 'STATE_INVALID' });
      await assert.rejects(store.list(), { code: 'STATE_INVALID' });
      assert.equal(readFileSync(file, 'utf8'), body);
      assert.equal(readFileSync(host.paths.receiptSeq, 'utf8'), seqBefore);
      assert.equal((await store.emit(input('api', 'a1'))).payload.seq, 2, 'other apps still get receipts');
    }));
}

test('every receipt verifies against helper.pub and not against another key or under another domain', () =>
  withHost(async (host) => {
    const store = await storeFor(host);
    const r = await store.emit(input('web', 'w0'));
    const pub = parsePublicKey(readFileSync(host.paths.helperPub));
    assert.deepEqual(verifyReceipt(r.envelope, pub), r.payload);
    assert.equal(verifyReceipt(r.envelope, parsePublicKey(generateKeyPair().publicPem)), null);
    assert.equal(openEnvelope(r.envelope, DOMAINS.manifest, new Map([[r.envelope.keyId, pub]])).ok, false);
    const { privateKey } = await loadOrCreateHelperKey(host.paths);
    assert.equal(verifyReceipt(signEnvelope(DOMAINS.heartbeat, r.payload, privateKey), pub), null);
    const altered = { ...r.payload, outcome: 'rolled-back' };
    assert.equal(verifyReceipt({ ...r.envelope, payload: Buffer.from(JSON.stringify(altered)).toString('base64') }, pub), null);
  }));

test('receipts files are 0640 in a 0750 folder, their group unchanged when there is no group steward', () =>
  withHost(async (host) => {
    const store = await storeFor(host, { groupFile: path.join(host.scratch, 'no-such-group-file') });
    await store.emit(input('web', 'w0'));
    const st = lstatSync(receiptsFile(host.paths, 'web'));
    assert.equal(st.mode & 0o7777, 0o640);
    assert.equal(lstatSync(host.paths.receiptsDir).mode & 0o7777, 0o750);
    assert.equal(lstatSync(host.paths.receiptSeq).mode & 0o7777, 0o600);
    assert.equal(st.gid, process.getegid?.());
    assert.equal(lstatSync(host.paths.receiptsDir).gid, process.getegid?.());
  }));

test('as root, receipts files and their folder belong to group steward when it exists', { skip: !IS_ROOT && 'needs root to chown' }, () =>
  withHost(async (host) => {
    const groupFile = path.join(host.scratch, 'group');
    writeFileSync(groupFile, 'root:x:0:\nsteward:x:4242:\n');
    const store = await storeFor(host, { groupFile });
    await store.emit(input('web', 'w0'));
    const st = lstatSync(receiptsFile(host.paths, 'web'));
    assert.equal(st.gid, 4242);
    assert.equal(st.mode & 0o7777, 0o640);
    assert.equal(lstatSync(host.paths.receiptsDir).gid, 4242);
  }));

test('a non-refused receipt without a target version is a bug and writes nothing', () =>
  withHost(async (host) => {
    const store = await storeFor(host);
    await assert.rejects(store.emit(input('web', 'w0', { targetVersion: null })), { code: 'INTERNAL' });
    assert.throws(() => readFileSync(receiptsFile(host.paths, 'web')), { code: 'ENOENT' });
    assert.equal((await store.emit(input('web', 'w1'))).payload.seq, 1, 'no seq was spent');
  }));

test('a listing taken while receipts are emitted never shows a seq without every lower one (no gap an outbox would skip)', async () => {
  await withHost(async (host) => {
    const store = await storeFor(host);
    const listings: number[][] = [];
    const all: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      all.push(store.emit(input(i % 2 ? 'api' : 'web', `gap-${i}`)));
      all.push(store.list().then((r) => listings.push(r.map((x) => x.payload.seq))));
    }
    await Promise.all(all);
    for (const seqs of listings) {
      assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1), `a listing with a gap: ${seqs.join(',')}`);
    }
    assert.ok(listings.some((l) => l.length > 0 && l.length < 40), 'some listings were taken mid-stream');
  });
});

// The store keeps an app's parsed receipts while the file on disk is the same one (issue 8,
// row 3); a file replaced or changed behind its back is read again, never served stale.
test('a receipts file replaced or changed on disk after the store read it is read again', () =>
  withHost(async (host) => {
    const store = await storeFor(host);
    await store.emit(input('web', 'a1'));
    const file = receiptsFile(host.paths, 'web');
    const afterFirst = readFileSync(file);
    await store.emit(input('web', 'a2'));
    assert.ok(await store.find('web', 'a2'), 'a2 is stored');
    // An older copy put back by a rename (another inode).
    writeFileSync(file + '.old', afterFirst, { mode: 0o640 });
    renameSync(file + '.old', file);
    assert.equal(await store.find('web', 'a2'), null, 'the file put back has no a2, and the store reads it again');
    assert.ok(await store.find('web', 'a1'));
    // The same file rewritten in place with something that is not receipts: refused, not the old list.
    await store.list('web');
    writeFileSync(file, '{"schemaVersion": 1, "app": "web", "receipts": "not a list"}\n');
    await assert.rejects(store.list('web'), (e: { code?: string }) => e.code === 'STATE_INVALID');
  }));
