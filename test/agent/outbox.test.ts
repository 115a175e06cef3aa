import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Envelope } from '../../src/core/release-schemas.js';
import { StewardError } from '../../src/core/errors.js';
import { Outbox } from '../../src/agent/outbox.js';
import { MAX_HEARTBEAT_RECEIPT_BYTES, MAX_HEARTBEAT_RECEIPTS } from '../../src/core/heartbeat-limits.js';
import { DOMAINS, keyIdOf, signEnvelope } from '../../src/platform/keys.js';
import { mulberry32 } from '../helpers/prng.js';

const NOW = 1_700_000_000_000;

function helperKey(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ed25519');
}
const helper = helperKey();

function receipt(seq: number, key: KeyObject = helper.privateKey, domain: (typeof DOMAINS)[keyof typeof DOMAINS] = DOMAINS.receipt): Envelope {
  return signEnvelope(
    domain,
    { v: 1, nodeId: 'node-a', app: 'web', attemptId: `att-${seq}`, seq, fromVersion: '1.0.0', targetVersion: '1.1.0', integrity: null, outcome: 'active', startedAt: NOW, updatedAt: NOW + seq },
    key,
  );
}

// One signed receipt per seq, made once: signing is the slow part of the property test.
const signed = new Map<number, Envelope>();
function r(seq: number): Envelope {
  let e = signed.get(seq);
  if (!e) signed.set(seq, (e = receipt(seq)));
  return e;
}
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const seqOf = (e: Envelope): number => (JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8')) as { seq: number }).seq;

// Every temp folder this file makes, removed once its tests are done.
const tmpDirs: string[] = [];
after(async () => {
  for (const d of tmpDirs) await fsp.rm(d, { recursive: true, force: true });
});

async function tmpDir(): Promise<string> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'steward-outbox-'));
  tmpDirs.push(dir);
  return dir;
}

async function tmpFile(): Promise<string> {
  return path.join(await tmpDir(), 'outbox.json');
}

async function assertStateInvalid(file: string): Promise<void> {
  await assert.rejects(Outbox.open(file), (err: unknown) => err instanceof StewardError && err.code === 'STATE_INVALID' && err.message.includes(file));
}

function assertSameState(a: Outbox, b: Outbox): void {
  assert.equal(a.helperKeyId, b.helperKeyId);
  assert.equal(a.highestSeq, b.highestSeq);
  assert.deepEqual(a.pending, b.pending);
}

test('an absent outbox file opens as an empty outbox', async () => {
  const file = await tmpFile();
  const box = await Outbox.open(file);
  assert.equal(box.highestSeq, 0);
  assert.equal(box.helperKeyId, null);
  assert.deepEqual(box.pending, []);
  assert.deepEqual(box.batch(), []);
});

test('taken receipts go out in a batch and leave pending once acknowledged', async () => {
  const file = await tmpFile();
  const box = await Outbox.open(file);
  const result = await box.take(helper.publicKey, [r(1), r(2), r(3)]);
  assert.deepEqual(result, { added: 3, rejected: 0, dropped: 0 });
  assert.equal(box.highestSeq, 3);
  assert.equal(box.helperKeyId, keyIdOf(helper.publicKey));
  assert.deepEqual(box.batch(), [r(1), r(2), r(3)]);
  await box.ack([1, 2, 3]);
  assert.deepEqual(box.pending, []);
  assert.equal(box.highestSeq, 3);
  assert.deepEqual((await Outbox.open(file)).pending, []);
});

test('a receipt already acknowledged is not added again while the helper still lists it', async () => {
  const box = await Outbox.open(await tmpFile());
  await box.take(helper.publicKey, [r(1), r(2)]);
  await box.ack([1, 2]);
  const again = await box.take(helper.publicKey, [r(1), r(2), r(3)]);
  assert.equal(again.added, 1);
  assert.deepEqual(box.pendingSeqs, [3]);
});

test('only receipts above highestSeq are copied, sorted by seq, each once', async () => {
  const box = await Outbox.open(await tmpFile());
  await box.take(helper.publicKey, [r(5)]);
  const result = await box.take(helper.publicKey, [r(8), r(4), r(6), r(5), r(8), r(7), r(6)]);
  assert.equal(result.added, 3);
  assert.deepEqual(box.pendingSeqs, [5, 6, 7, 8]);
  assert.equal(box.highestSeq, 8);
});

test('receipts the helper lists again are not verified again: one claiming a seq at or below highestSeq is skipped, forged or not', async () => {
  const box = await Outbox.open(await tmpFile());
  assert.deepEqual(await box.take(helper.publicKey, [r(1), r(2)]), { added: 2, rejected: 0, dropped: 0 });
  // Forged, yet claiming an old seq: not taken, and not even verified (so not counted as rejected).
  const forgedOld = { ...receipt(2, helperKey().privateKey), keyId: keyIdOf(helper.publicKey) };
  // Forged and claiming a new seq: verified, refused.
  const forgedNew = { ...receipt(3, helperKey().privateKey), keyId: keyIdOf(helper.publicKey) };
  const notJson = { payload: Buffer.from('{"seq":').toString('base64'), sig: 'x', keyId: keyIdOf(helper.publicKey) };
  assert.deepEqual(await box.take(helper.publicKey, [r(1), r(2), forgedOld, forgedNew, notJson, null as unknown as Envelope]), { added: 0, rejected: 3, dropped: 0 });
  assert.deepEqual(box.pendingSeqs, [1, 2]);
  assert.deepEqual(await box.take(helper.publicKey, [r(2), r(3)]), { added: 1, rejected: 0, dropped: 0 });
  assert.deepEqual(box.pendingSeqs, [1, 2, 3]);
});

test('a receipt the helper key does not verify is never taken', async () => {
  const box = await Outbox.open(await tmpFile());
  const forged = receipt(2, helperKey().privateKey);
  const forgedUnderOurKeyId = { ...receipt(3, helperKey().privateKey), keyId: keyIdOf(helper.publicKey) };
  const wrongDomain = receipt(4, helper.privateKey, DOMAINS.heartbeat);
  const result = await box.take(helper.publicKey, [r(1), forged, forgedUnderOurKeyId, wrongDomain]);
  assert.deepEqual(result, { added: 1, rejected: 3, dropped: 0 });
  assert.deepEqual(box.pendingSeqs, [1]);
  assert.equal(box.highestSeq, 1);
});

test('a batch holds the 64 oldest pending receipts', async () => {
  const box = await Outbox.open(await tmpFile());
  await box.take(helper.publicKey, range(1, 100).reverse().map(r));
  assert.deepEqual(box.batch().map(seqOf), range(1, 64));
  assert.deepEqual(box.batch(10).map(seqOf), range(1, 10));
  await box.ack(range(1, 64));
  assert.deepEqual(box.batch().map(seqOf), range(65, 100));
});

test('a batch of receipts with log tails stops at 512 KiB encoded, however many fit the count: a heartbeat stays under its 1 MiB body limit', async () => {
  const box = await Outbox.open(await tmpFile());
  const tail = 'e'.repeat(8000) + '\n';
  const heavy = (seq: number) =>
    signEnvelope(DOMAINS.receipt, { v: 2, nodeId: 'node-a', app: 'web', attemptId: `att-${seq}`, seq, fromVersion: '1.0.0', targetVersion: '1.1.0', integrity: null, outcome: 'rolled-back', startedAt: NOW, updatedAt: NOW + seq, logTail: tail }, helper.privateKey);
  await box.take(helper.publicKey, range(1, 64).map(heavy));
  const batch = box.batch(MAX_HEARTBEAT_RECEIPTS, MAX_HEARTBEAT_RECEIPT_BYTES);
  const bytes = batch.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)) + 1, 0);
  assert.ok(batch.length >= 40 && batch.length < 64, `${batch.length} receipts`);
  assert.ok(bytes <= MAX_HEARTBEAT_RECEIPT_BYTES, `${bytes} bytes`);
  assert.deepEqual(batch.map(seqOf), range(1, batch.length), 'the oldest first');
  assert.equal(box.batch(64, 10).length, 1, 'the oldest receipt goes alone when even it is over the bound');
});

test('an acknowledgement removes exactly the acknowledged seqs and ignores unknown ones', async () => {
  const file = await tmpFile();
  const box = await Outbox.open(file);
  await box.take(helper.publicKey, range(1, 6).map(r));
  await box.ack([2, 5, 99, 0, -1]);
  assert.deepEqual(box.pendingSeqs, [1, 3, 4, 6]);
  const before = await fsp.readFile(file, 'utf8');
  await box.ack([2, 5, 1000]);
  assert.deepEqual(box.pendingSeqs, [1, 3, 4, 6]);
  assert.equal(await fsp.readFile(file, 'utf8'), before);
  assert.deepEqual((await Outbox.open(file)).pendingSeqs, [1, 3, 4, 6]);
});

test('reopening the file gives the same outbox after every mutation', async () => {
  const file = await tmpFile();
  const box = await Outbox.open(file);
  await box.take(helper.publicKey, range(1, 5).map(r));
  assertSameState(box, await Outbox.open(file));
  await box.ack([1, 3]);
  assertSameState(box, await Outbox.open(file));
  await box.take(helper.publicKey, range(3, 9).map(r));
  const reopened = await Outbox.open(file);
  assertSameState(box, reopened);
  assert.deepEqual(reopened.pendingSeqs, [2, 4, 5, 6, 7, 8, 9]);
  assert.equal(reopened.highestSeq, 9);
});

test('the outbox file is 0600 and no temp file is left beside it', async () => {
  const file = await tmpFile();
  const box = await Outbox.open(file);
  await box.take(helper.publicKey, [r(1)]);
  await box.ack([1]);
  assert.equal((await fsp.stat(file)).mode & 0o777, 0o600);
  assert.deepEqual(await fsp.readdir(path.dirname(file)), ['outbox.json']);
});

test('an outbox from a newer steward is refused and left unchanged', async () => {
  const file = await tmpFile();
  const body = JSON.stringify({ schemaVersion: 2, helperKeyId: keyIdOf(helper.publicKey), highestSeq: 1, pending: [r(1)] });
  await fsp.writeFile(file, body, { mode: 0o600 });
  await assertStateInvalid(file);
  assert.equal(await fsp.readFile(file, 'utf8'), body);
});

test('an outbox file that is not JSON or not an outbox is refused and left unchanged', async () => {
  const key = keyIdOf(helper.publicKey);
  const bodies = [
    'garbage{',
    '',
    JSON.stringify({ schemaVersion: 1, helperKeyId: key, highestSeq: -1, pending: [] }),
    JSON.stringify({ schemaVersion: 1, helperKeyId: key, highestSeq: 3, pending: [{ payload: 'eA==', sig: 'eA==', keyId: key }] }),
    // above highestSeq, out of order, signed by another key than helperKeyId
    JSON.stringify({ schemaVersion: 1, helperKeyId: key, highestSeq: 1, pending: [r(2)] }),
    JSON.stringify({ schemaVersion: 1, helperKeyId: key, highestSeq: 3, pending: [r(2), r(1)] }),
    JSON.stringify({ schemaVersion: 1, helperKeyId: '0123456789abcdef', highestSeq: 3, pending: [r(1)] }),
  ];
  for (const body of bodies) {
    const file = await tmpFile();
    await fsp.writeFile(file, body, { mode: 0o600 });
    await assertStateInvalid(file);
    assert.equal(await fsp.readFile(file, 'utf8'), body);
  }
});

test('a new helper key resets highestSeq and drops the old key\'s pending receipts', async () => {
  const file = await tmpFile();
  const box = await Outbox.open(file);
  await box.take(helper.publicKey, range(1, 40).map(r));
  await box.ack(range(1, 30));
  const next = helperKey();
  // The helper still lists the old key's receipts next to the new key's, whose seqs restart.
  const newReceipts = [receipt(1, next.privateKey), receipt(2, next.privateKey)];
  const result = await box.take(next.publicKey, [...range(31, 40).map(r), ...newReceipts]);
  assert.deepEqual(result, { added: 2, rejected: 10, dropped: 10 });
  assert.equal(box.helperKeyId, keyIdOf(next.publicKey));
  assert.equal(box.highestSeq, 2);
  assert.deepEqual(box.pending, newReceipts);
  assertSameState(box, await Outbox.open(file));
});

test('a new helper key with nothing to take still resets the outbox durably', async () => {
  const file = await tmpFile();
  const box = await Outbox.open(file);
  await box.take(helper.publicKey, range(1, 3).map(r));
  const next = helperKey();
  assert.deepEqual(await box.take(next.publicKey, []), { added: 0, rejected: 0, dropped: 3 });
  const reopened = await Outbox.open(file);
  assert.equal(reopened.highestSeq, 0);
  assert.equal(reopened.helperKeyId, keyIdOf(next.publicKey));
  assert.deepEqual(reopened.pending, []);
});

test('a write that fails leaves the outbox as it was', async () => {
  const dir = await tmpDir();
  const file = path.join(dir, 'gone', 'outbox.json');
  const box = await Outbox.open(file);
  await assert.rejects(box.take(helper.publicKey, [r(1)]), (err: unknown) => err instanceof StewardError && err.code === 'IO_ERROR');
  assert.equal(box.highestSeq, 0);
  assert.deepEqual(box.pending, []);
  await fsp.mkdir(path.dirname(file));
  assert.equal((await box.take(helper.publicKey, [r(1)])).added, 1);
});

test('concurrent takes and acknowledgements are all durable', async () => {
  const file = await tmpFile();
  const box = await Outbox.open(file);
  await box.take(helper.publicKey, range(1, 10).map(r));
  await Promise.all([box.ack([1, 2]), box.take(helper.publicKey, range(11, 20).map(r)), box.ack([11, 12]), box.take(helper.publicKey, range(15, 25).map(r))]);
  const expected = [...range(3, 10), ...range(13, 25)];
  assert.deepEqual(box.pendingSeqs, expected);
  assert.deepEqual((await Outbox.open(file)).pendingSeqs, expected);
});

test('over random overlapping windows, acks and restarts every receipt enters pending once and is acknowledged', async () => {
  const TOTAL = 200;
  for (const seed of [1, 2, 3, 42, 20240611]) {
    const rand = mulberry32(seed);
    const int = (lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));
    const file = await tmpFile();
    let box = await Outbox.open(file);
    const entered = new Map<number, number>(); // seq -> times it entered pending
    const stored = new Map<number, number>(); // the control plane: seq -> times stored fresh
    let emitted = 0; // the helper has made receipts 1..emitted
    let listedFrom = 1; // the helper lists receipts listedFrom..emitted (the last 64 of them)

    for (let step = 0; step < 5000 && (box.highestSeq < TOTAL || box.pending.length > 0); step++) {
      const op = rand();
      if (op < 0.4) {
        // The helper makes a few receipts and trims its list, but never past what the agent has
        // taken: a receipt trimmed unseen is a loss the outbox cannot prevent (the CP shows a gap).
        emitted = Math.min(TOTAL, emitted + int(0, 8));
        listedFrom = Math.max(listedFrom, Math.min(box.highestSeq + 1, emitted - 63), 1);
        // A window starts anywhere from the oldest listed receipt to just above highestSeq (the
        // helper's list has no gap below its newest) and ends anywhere up to the newest.
        const lo = int(listedFrom, Math.max(listedFrom, Math.min(box.highestSeq + 1, emitted)));
        const window = range(lo, int(lo - 1, emitted));
        // Overlapping windows, in any order, sometimes with repeats.
        const listed = [...window, ...window.filter(() => rand() < 0.1)].sort(() => rand() - 0.5);
        const before = new Set(box.pendingSeqs);
        await box.take(helper.publicKey, listed.map(r));
        for (const s of box.pendingSeqs) if (!before.has(s)) entered.set(s, (entered.get(s) ?? 0) + 1);
      } else if (op < 0.8) {
        // A heartbeat: the CP stores what is new and acknowledges the whole batch; sometimes the
        // answer is lost (no ack) or the agent dies before acking, and the batch goes out again.
        const batch = box.batch(int(1, 64));
        for (const s of batch.map(seqOf)) if (!stored.has(s)) stored.set(s, 1);
        if (rand() < 0.8) await box.ack(batch.map(seqOf));
      } else {
        // The agent restarts: everything it returned from is on disk.
        const reopened = await Outbox.open(file);
        assertSameState(reopened, box);
        box = reopened;
      }
    }
    assert.equal(emitted, TOTAL, `seed ${seed}: the helper made every receipt`);
    assert.deepEqual(box.pending, [], `seed ${seed}: pending ends empty`);
    assert.deepEqual([...entered.keys()].sort((a, b) => a - b), range(1, TOTAL), `seed ${seed}: every receipt entered pending`);
    assert.ok([...entered.values()].every((n) => n === 1), `seed ${seed}: no receipt entered pending twice`);
    assert.deepEqual([...stored.keys()].sort((a, b) => a - b), range(1, TOTAL), `seed ${seed}: the control plane stored every receipt`);
    assert.deepEqual((await Outbox.open(file)).pending, []);
  }
});

test('the relay mark follows every change: the seq below the oldest pending receipt, or highestSeq when none is pending', async () => {
  const dir = await tmpDir();
  const markFile = path.join(dir, 'relayed.json');
  const mark = async () => JSON.parse(await fsp.readFile(markFile, 'utf8'));
  const o = await Outbox.open(path.join(dir, 'outbox.json'), { markFile });
  await o.publishRelayMark();
  await assert.rejects(fsp.access(markFile), 'no mark before any receipt was taken or any key is known');
  await o.publishRelayMark('0123456789abcdef');
  assert.deepEqual(await mark(), { schemaVersion: 1, helperKeyId: '0123456789abcdef', relayedSeq: 0 }, 'enrollment: nothing relayed yet');

  await o.take(helper.publicKey, range(1, 5).map(r));
  assert.deepEqual(await mark(), { schemaVersion: 1, helperKeyId: keyIdOf(helper.publicKey), relayedSeq: 0 }, 'taken is not relayed');
  await o.ack([1, 2, 4]);
  assert.equal((await mark()).relayedSeq, 2, 'seq 3 still waits for its acknowledgement');
  await o.ack([3, 5]);
  assert.equal((await mark()).relayedSeq, 5);
  assert.equal((await fsp.stat(markFile)).mode & 0o777, 0o600);
});

test('past its most pending receipts the newer ones stay with the helper, in seq order, and are taken once acknowledgements make room', async () => {
  const file = await tmpFile();
  const o = await Outbox.open(file, { maxPending: 10 });
  await o.take(helper.publicKey, range(1, 25).map(r));
  assert.deepEqual(o.pendingSeqs, range(1, 10));
  assert.equal(o.highestSeq, 10, 'highestSeq is the last taken: 11 to 25 are still to take');
  await o.ack(range(1, 4));
  await o.take(helper.publicKey, range(1, 25).map(r));
  assert.deepEqual(o.pendingSeqs, range(5, 14));
  const reopened = await Outbox.open(file, { maxPending: 5 });
  assert.deepEqual(reopened.pendingSeqs, range(5, 14), 'an outbox past a smaller cap still opens, whole');
});
