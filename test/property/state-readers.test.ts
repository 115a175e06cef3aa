// Property tests of every reader of steward's own files (issue 7 item 5): journal, app state,
// hold expiry, receipts, receipt seq, node id, run record, marker, host config, and the agent's outbox, seq,
// acted and enrollment files. Whatever bytes a file holds (a torn write, a bit flip, a hand
// edit), the reader gives a value its schema accepts or refuses with its typed answer (a
// StewardError of the reader's code, or an 'invalid' state), never another exception, and
// reading changes no file.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, promises as fsp, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { hostConfigSchema } from '../../src/core/config-schema.js';
import { StewardError, type ReasonCode } from '../../src/core/errors.js';
import { journalSchema } from '../../src/core/journal-schema.js';
import { outboxFileSchema } from '../../src/core/outbox-schema.js';
import { hostPaths, journalFile, receiptsFile, stateFile, supervisorFile, versionDir } from '../../src/core/paths.js';
import { receiptPayloadSchema, receiptSeqFileSchema } from '../../src/core/receipt-schema.js';
import { MARKER_FILE_NAME, markerSchema } from '../../src/core/release-schemas.js';
import { runRecordSchema } from '../../src/core/run-record-schema.js';
import { appStateSchema } from '../../src/core/state-schemas.js';
import { systemClock } from '../../src/platform/clock.js';
import { DOMAINS, keyIdOf, signEnvelope } from '../../src/platform/keys.js';
import { readVersionedJson } from '../../src/platform/versioned-file.js';
import { ActedStore } from '../../src/agent/acted-store.js';
import { agentFiles, readEnrollment } from '../../src/agent/agent-files.js';
import { enrollmentFileSchema } from '../../src/agent/enrollment-schema.js';
import { Outbox } from '../../src/agent/outbox.js';
import { SeqStore } from '../../src/agent/seq-store.js';
import { loadHostConfig } from '../../src/host/config.js';
import { readMarker, inspectMarker } from '../../src/helper/release-store.js';
import { readNodeId } from '../../src/host/node-id.js';
import { ReceiptStore } from '../../src/helper/receipts/receipt-store.js';
import { readRunRecord } from '../../src/helper/runners/run-record.js';
import { readAppState } from '../../src/helper/state/app-state.js';
import { holdFile, holdFileSchema, readHoldFile } from '../../src/helper/holds/hold-file.js';
import { readJournal } from '../../src/helper/update/journal.js';
import { mutatedBytes, nearValidJsonBytes } from './mutate.js';
import { checkProperty, guarded, runsMade } from './property-run.js';
import { INTEGRITY } from './requests.js';

const base = mkdtempSync(path.join(os.tmpdir(), 'steward-readers-'));
const paths = hostPaths(path.join(base, 'root'));
const files = agentFiles(paths);
for (const d of [paths.journalDir, paths.stateDir, paths.receiptsDir, paths.supervisorDir, path.dirname(paths.configFile), versionDir(paths, 'web', '1.0.0'), files.dir]) mkdirSync(d, { recursive: true });
after(() => {
  rmSync(base, { recursive: true, force: true });
  process.stdout.write(`# ${runsMade.count} runs in this file\n`);
});

const T = 1_800_000_000_000;
const helperKey = generateKeyPairSync('ed25519');
const receipt = (seq: number) =>
  signEnvelope(DOMAINS.receipt, { v: 1, nodeId: null, app: 'web', attemptId: `cli-${seq}`, seq, fromVersion: '1.0.0', targetVersion: '1.1.0', integrity: INTEGRITY, outcome: 'active', startedAt: T, updatedAt: T + 1, reason: { code: 'ALREADY_ACTIVE', message: 'x' } }, helperKey.privateKey);
const receiptStore = new ReceiptStore({ paths, clock: systemClock, signer: { privateKey: helperKey.privateKey, keyId: keyIdOf(helperKey.publicKey) }, nodeId: async () => null });

// A reader: the file it reads, a valid content to mutate, and how to check what it gave.
interface Reader {
  name: string;
  file: string;
  valid: unknown;
  // Reads the file; resolves to a value to check, or rejects.
  read(): Promise<unknown>;
  // Whether a resolved value is one the reader may give for a file that exists.
  accepts(value: unknown): boolean;
  // The StewardError code a refusal carries; readers that answer a state never throw.
  code: ReasonCode | null;
}

const schemaAccepts = (schema: { safeParse(v: unknown): { success: boolean } }) => (v: unknown) => schema.safeParse(v).success;

const readers: Reader[] = [
  {
    name: 'readJournal',
    file: journalFile(paths, 'web'),
    valid: { schemaVersion: 1, attemptId: 'cli-1', app: 'web', fromVersion: '1.0.0', targetVersion: '1.1.0', integrity: INTEGRITY, outcome: 'rolled-back', startedAt: T, updatedAt: T + 5, rollbackHealthy: true, reason: { code: 'REPLACEMENT_UNHEALTHY', message: 'probe' }, prior: { previous: null, highestActive: '1.0.0', quarantine: { failures: 1, retryAfter: T } } },
    read: () => readJournal(paths, 'web'),
    accepts: (v) => {
      const r = v as Awaited<ReturnType<typeof readJournal>>;
      if (r.state === 'ok') return journalSchema.safeParse(r.journal).success && r.journal.app === 'web';
      return r.state === 'invalid' && r.why.length > 0;
    },
    code: null,
  },
  {
    name: 'readAppState',
    file: stateFile(paths, 'web'),
    valid: { schemaVersion: 1, previous: '1.0.0', highestActive: '1.1.0', quarantine: { '1.2.0': { failures: 2, retryAfter: T } }, hold: { by: 'ops', at: T, reason: 'x' }, blocked: { reason: 'JOURNAL_INVALID', since: T } },
    read: () => readAppState(paths, 'web'),
    accepts: schemaAccepts(appStateSchema),
    code: 'STATE_INVALID',
  },
  {
    // A hold file that does not read is no expiry (null), never an exception (docs/design.md §18).
    name: 'readHoldFile (state/<app>.hold.json)',
    file: holdFile(paths, 'web'),
    valid: { schemaVersion: 1, app: 'web', expiry: { by: 'ops', reason: 'freeze', at: T, until: T + 3_600_000 }, lifted: { by: 'ops', reason: 'x', at: T - 9, until: null, liftedAt: T - 1, how: 'released', releasedBy: 'root' } },
    read: () => readHoldFile(paths, 'web'),
    accepts: (v) => v === null || (holdFileSchema.safeParse(v).success && (v as { app: string }).app === 'web'),
    code: null,
  },
  {
    name: 'ReceiptStore.list (receipts/<app>.json)',
    file: receiptsFile(paths, 'web'),
    valid: { schemaVersion: 1, app: 'web', lastTransaction: { attemptId: 'cli-2', seq: 2 }, receipts: [receipt(1), receipt(2)] },
    read: () => receiptStore.list('web'),
    accepts: (v) => Array.isArray(v) && v.every((r: { payload: unknown }) => receiptPayloadSchema.safeParse(r.payload).success),
    code: 'STATE_INVALID',
  },
  {
    name: 'receipt-seq.json',
    file: paths.receiptSeq,
    valid: { schemaVersion: 1, next: 7 },
    read: () => readVersionedJson(paths.receiptSeq, 1, receiptSeqFileSchema, 4096),
    accepts: schemaAccepts(receiptSeqFileSchema),
    code: 'STATE_INVALID',
  },
  {
    name: 'readNodeId',
    file: paths.nodeState,
    valid: { schemaVersion: 1, nodeId: 'n-1', extra: true },
    read: () => readNodeId(paths),
    accepts: (v) => typeof v === 'string' && v.length > 0 && v.length <= 128,
    code: 'STATE_INVALID',
  },
  {
    name: 'readRunRecord',
    file: supervisorFile(paths, 'web'),
    valid: { schemaVersion: 1, app: 'web', expected: 'running', version: '1.0.0', process: { pid: 42, startTicks: 9, bootId: 'b' }, startedAt: T, logOffset: 10, supervisor: { state: 'waiting', attempts: 2, lastStartAt: T, lastExitAt: T, nextAttemptAt: T + 1, lastExit: { code: 1, signal: null }, giveUpReason: null } },
    read: () => readRunRecord(paths, 'web'),
    accepts: schemaAccepts(runRecordSchema),
    code: 'STATE_INVALID',
  },
  {
    name: 'inspectMarker (.steward-valid)',
    file: path.join(versionDir(paths, 'web', '1.0.0'), MARKER_FILE_NAME),
    valid: { schemaVersion: 1, tarballIntegrity: INTEGRITY, treeDigest: 'sha256-' + 'B'.repeat(43) + '=', signed: true, keyId: '0123456789abcdef', version: '1.0.0', stagedAt: T },
    read: async () => ({ inspected: await inspectMarker(paths, 'web', '1.0.0'), marker: await readMarker(paths, 'web', '1.0.0') }),
    accepts: (v) => {
      const { inspected: m, marker } = v as { inspected: Awaited<ReturnType<typeof inspectMarker>>; marker: unknown };
      if (m.state === 'valid') return markerSchema.safeParse(m.marker).success && m.marker.version === '1.0.0' && marker !== null;
      if (marker !== null) return false;
      return (m.state === 'invalid' && m.why.length > 0) || (m.state === 'newer' && m.schemaVersion > 1);
    },
    code: null,
  },
  {
    name: 'loadHostConfig',
    file: paths.configFile,
    valid: { apps: { web: { runner: 'process' } } },
    read: () => loadHostConfig(paths.configFile, { isRoot: false, accounts: { user: async () => null, group: async () => null } }),
    accepts: schemaAccepts(hostConfigSchema),
    code: 'CONFIG_INVALID',
  },
  {
    name: 'Outbox.open',
    file: files.outbox,
    valid: { schemaVersion: 1, helperKeyId: keyIdOf(helperKey.publicKey), highestSeq: 3, pending: [receipt(2), receipt(3)] },
    read: async () => {
      const o = await Outbox.open(files.outbox);
      return { helperKeyId: o.helperKeyId, highestSeq: o.highestSeq, pending: [...o.pending], seqs: [...o.pendingSeqs] };
    },
    accepts: (v) => {
      const o = v as { pending: unknown[]; seqs: number[]; highestSeq: number };
      const { seqs: _s, ...body } = o;
      return outboxFileSchema.safeParse({ schemaVersion: 1, ...body }).success && o.seqs.every((s, i) => s > (o.seqs[i - 1] ?? 0) && s <= o.highestSeq);
    },
    code: 'STATE_INVALID',
  },
  {
    name: 'SeqStore.open',
    file: files.seq,
    valid: { schemaVersion: 1, lastSeq: 12 },
    read: async () => (await SeqStore.open(files.seq)).lastSeq,
    accepts: (v) => Number.isSafeInteger(v) && (v as number) >= 0,
    code: 'STATE_INVALID',
  },
  {
    name: 'ActedStore.open',
    file: files.acted,
    valid: { schemaVersion: 1, acted: [{ attemptId: 'run-1-a', app: 'web', at: T, answer: 'accepted' }] },
    read: async () => (await ActedStore.open(files.acted)).all,
    accepts: (v) => Array.isArray(v),
    code: 'STATE_INVALID',
  },
  {
    name: 'readEnrollment',
    file: files.enrollment,
    valid: { schemaVersion: 1, nodeId: 'n-1', controlPlaneUrl: 'https://cp.example:8443', enrolledAt: T, heartbeatSeconds: 30, nodeKeyId: '0123456789abcdef' },
    read: () => readEnrollment(files),
    accepts: schemaAccepts(enrollmentFileSchema),
    code: 'STATE_INVALID',
  },
];

// Every file under the root with its bytes, to show that a read wrote nothing.
async function contents(dir: string, out = new Map<string, string>()): Promise<Map<string, string>> {
  for (const name of (await fsp.readdir(dir)).sort()) {
    const p = path.join(dir, name);
    const st = await fsp.lstat(p);
    if (st.isDirectory()) await contents(p, out);
    else out.set(p, (await fsp.readFile(p)).toString('base64'));
  }
  return out;
}

// 'value', or the state a reader that answers states gave.
function outcomeOf(value: unknown): string {
  const v = value as { state?: string; inspected?: { state: string } } | null;
  return v?.state ?? v?.inspected?.state ?? 'value';
}

for (const r of readers) {
  test(`${r.name}: any file content gives a valid value or a typed refusal, and changes nothing`, async () => {
    const validBytes = Buffer.from(JSON.stringify(r.valid, null, 2));
    // The unmutated content must read: otherwise every refusal below would prove nothing.
    await fsp.writeFile(r.file, validBytes);
    const first = await r.read();
    assert.ok(r.accepts(first) && ['value', 'ok', 'valid'].includes(outcomeOf(first)), `${r.name}: the valid content does not read: ${JSON.stringify(first)}`);
    const content = fc.oneof(
      { weight: 4, arbitrary: nearValidJsonBytes(r.valid) },
      { weight: 2, arbitrary: mutatedBytes(validBytes, 3) },
      { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)) },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')) },
    );
    const othersBefore = await contents(paths.root);
    othersBefore.delete(r.file);
    const outcomes = new Map<string, number>();
    await checkProperty(
      `reader ${r.name}`,
      fc.asyncProperty(content, guarded(async (bytes) => {
        await fsp.writeFile(r.file, bytes);
        const ino = (await fsp.lstat(r.file)).ino;
        let outcome: string;
        try {
          const value = await r.read();
          assert.ok(r.accepts(value), `gave a value it should not: ${JSON.stringify(value)}`);
          outcome = outcomeOf(value);
        } catch (err) {
          assert.ok(err instanceof StewardError, `threw a ${(err as Error)?.constructor?.name}: ${String(err)}`);
          assert.equal(err.code, r.code, err.message);
          assert.ok(err.message.includes(path.basename(r.file)) || err.message.includes('app'), `the message does not name the file: ${err.message}`);
          outcome = err.code;
        }
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        // The file itself, read back: same inode (no atomic replace) and same bytes.
        assert.equal((await fsp.lstat(r.file)).ino, ino, 'reading replaced the file');
        assert.ok((await fsp.readFile(r.file)).equals(bytes), 'reading changed the file');
      })),
      150,
    );
    // Every other file, and no new one (a temp file of an atomic write), once for all runs.
    const others = await contents(paths.root);
    others.delete(r.file);
    assert.deepEqual(others, othersBefore, 'reading changed another file');
    process.stdout.write(`# ${r.name} outcomes: ${JSON.stringify(Object.fromEntries([...outcomes].sort()))}\n`);
    await fsp.rm(r.file, { force: true });
  });
}
