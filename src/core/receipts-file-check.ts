// The helper's receipt store checked without zod (issue 8, row 5: the helper reads these files at
// start, on every `receipts` op, which the agent asks each heartbeat, and on every update outcome).
// Each check accepts exactly what its schema of receipt-schema.ts accepts and returns what it
// would (test/core/receipts-file-check.test.ts holds them to the same verdicts, both ways);
// the schema is imported only to word a refusal.
import type { Checker } from './checker.js';
import { checkEnvelope } from './envelope-check.js';
import { isInt, isObject, onlyKeys } from './json-checks.js';
import { APP_NAME_RE, ATTEMPT_ID_RE, UNKNOWN_APPS_RECEIPTS } from './name-checks.js';
import { checkReceiptPayload } from './receipt-check.js';
import type { ReceiptPayload, ReceiptSeqFile, ReceiptsFile } from './receipt-schema.js';
import type { Envelope } from './release-schemas.js';

export const RECEIPTS_FILE_SCHEMA_VERSION = 1;
export const RECEIPT_SEQ_SCHEMA_VERSION = 1;

const SEQ_MAX = Number.MAX_SAFE_INTEGER;
const isSeq = (v: unknown): v is number => isInt(v, 1, SEQ_MAX);

// receipts/<app>.json as receiptsFileSchema returns it, or null when it would refuse it.
export function checkReceiptsFile(v: unknown): ReceiptsFile | null {
  if (!isObject(v) || !onlyKeys(v, ['schemaVersion', 'app', 'lastTransaction', 'receipts'])) return null;
  if (v.schemaVersion !== RECEIPTS_FILE_SCHEMA_VERSION) return null;
  if (typeof v.app !== 'string' || !(APP_NAME_RE.test(v.app) || v.app === UNKNOWN_APPS_RECEIPTS)) return null;
  let lastTransaction: ReceiptsFile['lastTransaction'] = null;
  if (v.lastTransaction !== null) {
    const t = v.lastTransaction;
    if (!isObject(t) || !onlyKeys(t, ['attemptId', 'seq'])) return null;
    if (typeof t.attemptId !== 'string' || !ATTEMPT_ID_RE.test(t.attemptId) || !isSeq(t.seq)) return null;
    lastTransaction = { attemptId: t.attemptId, seq: t.seq };
  }
  if (!Array.isArray(v.receipts) || v.receipts.length > 1024) return null;
  const receipts: Envelope[] = [];
  for (const e of v.receipts) {
    const r = checkEnvelope(e, 'receipts');
    if (!r.ok) return null;
    receipts.push(r.value);
  }
  return { schemaVersion: RECEIPTS_FILE_SCHEMA_VERSION, app: v.app, lastTransaction, receipts };
}

// state/receipt-seq.json as receiptSeqFileSchema returns it, or null when it would refuse it.
export function checkReceiptSeqFile(v: unknown): ReceiptSeqFile | null {
  if (!isObject(v) || !onlyKeys(v, ['schemaVersion', 'next'])) return null;
  if (v.schemaVersion !== RECEIPT_SEQ_SCHEMA_VERSION || !isSeq(v.next)) return null;
  return { schemaVersion: RECEIPT_SEQ_SCHEMA_VERSION, next: v.next };
}

// Module-level constants: a Checker may be a parse-cache key (versioned-file.ts).
export const receiptsFileChecker: Checker<ReceiptsFile> = {
  check: checkReceiptsFile,
  schema: async () => (await import('./receipt-schema.js')).receiptsFileSchema,
};
export const receiptSeqFileChecker: Checker<ReceiptSeqFile> = {
  check: checkReceiptSeqFile,
  schema: async () => (await import('./receipt-schema.js')).receiptSeqFileSchema,
};
// A receipt payload (receipt-check.ts), for a payload read back or about to be signed.
export const receiptPayloadChecker: Checker<ReceiptPayload> = {
  check: checkReceiptPayload,
  schema: async () => (await import('./receipt-schema.js')).receiptPayloadSchema,
};
