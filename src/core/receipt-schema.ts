import * as z from './zod-mini.js';
import { appNameSchema, attemptIdSchema, epochMsSchema, integritySchema, intSchema, versionSchema } from './names.js';
import { reasonSchema } from './journal-schema.js';
import { envelopeSchema } from './release-schemas.js';
import { UNKNOWN_APPS_RECEIPTS } from './name-checks.js';
import { isLogTail, LOG_TAIL_MAX_BYTES } from './log-tail-text.js';

export const RECEIPTS_FILE_SCHEMA_VERSION = 1;
export const RECEIPT_SEQ_SCHEMA_VERSION = 1;
// The terminal outcomes a receipt records.
export const RECEIPT_OUTCOMES = ['active', 'rolled-back', 'failed', 'refused'] as const;
export type ReceiptOutcome = (typeof RECEIPT_OUTCOMES)[number];
// The receipt payload versions this steward reads (docs/design.md §16: every one from 1 to the newest).
// v2 adds `logTail` (docs/design.md §12), v3 `causeAttemptId` (docs/design.md §17); a helper signs a
// version above 1 only once the control plane says it takes it.
export const RECEIPT_VERSIONS = [1, 2, 3] as const;
export type ReceiptVersion = (typeof RECEIPT_VERSIONS)[number];
// The outcomes whose receipt may carry the failed version's log lines.
export const LOG_TAIL_OUTCOMES: readonly ReceiptOutcome[] = ['rolled-back', 'failed'];

const seqSchema = intSchema(1);

// The signed receipt payload of docs/design.md §6, one per update attempt's terminal outcome.
// `nodeId` is null until the host is enrolled. A refusal may lack a version or integrity
// the request never established; any other outcome names the version it was about.
export const receiptPayloadSchema = z
  .strictObject({
    v: z.union([z.literal(1), z.literal(2), z.literal(3)]),
    nodeId: z.nullable(z.string().check(z.maxLength(128))),
    app: appNameSchema,
    attemptId: attemptIdSchema,
    seq: seqSchema,
    fromVersion: z.nullable(versionSchema),
    targetVersion: z.nullable(versionSchema),
    integrity: z.nullable(integritySchema),
    outcome: z.enum(RECEIPT_OUTCOMES),
    startedAt: epochMsSchema,
    updatedAt: epochMsSchema,
    retryAfter: z.optional(epochMsSchema),
    rollbackHealthy: z.optional(z.boolean()),
    reason: z.optional(reasonSchema),
    logFile: z.optional(z.string().check(z.maxLength(4096))),
    // v2: the failed version's last log lines (core/log-tail-text.ts).
    logTail: z.optional(
      z.string().check(
        z.refine(isLogTail, { message: `must be valid UTF-8 without control characters other than tab and newline, at most ${LOG_TAIL_MAX_BYTES} bytes JSON-encoded` }),
      ),
    ),
    // v3: the attempt whose activation this one undid (a rollback by the watch window, docs/design.md §17).
    causeAttemptId: z.optional(attemptIdSchema),
  })
  .check(
    z.refine((p) => p.outcome === 'refused' || p.targetVersion !== null, {
      message: 'only a refused receipt may lack targetVersion',
      path: ['targetVersion'],
    }),
    z.refine((p) => p.logTail === undefined || p.v >= 2, { message: 'logTail needs receipt payload v2', path: ['logTail'] }),
    z.refine((p) => p.causeAttemptId === undefined || p.v >= 3, { message: 'causeAttemptId needs receipt payload v3', path: ['causeAttemptId'] }),
    z.refine((p) => p.logTail === undefined || LOG_TAIL_OUTCOMES.includes(p.outcome), { message: 'only a rolled-back or failed receipt carries logTail', path: ['logTail'] }),
  );
export type ReceiptPayload = z.infer<typeof receiptPayloadSchema>;

// receipts/<app>.json (docs/design.md §2): the last receipts of one app, oldest first, plus the
// latest non-refused attempt, whose receipt is never trimmed out of `receipts`.
export const receiptsFileSchema = z.strictObject({
  schemaVersion: z.literal(RECEIPTS_FILE_SCHEMA_VERSION),
  // The app, or UNKNOWN_APPS_RECEIPTS for the file the apps not in the config share.
  app: z.union([appNameSchema, z.literal(UNKNOWN_APPS_RECEIPTS)]),
  lastTransaction: z.nullable(z.strictObject({ attemptId: attemptIdSchema, seq: seqSchema })),
  receipts: z.array(envelopeSchema).check(z.maxLength(1024)),
});
export type ReceiptsFile = z.infer<typeof receiptsFileSchema>;

// state/receipt-seq.json (docs/design.md §2): the next receipt seq, never reused.
export const receiptSeqFileSchema = z.strictObject({
  schemaVersion: z.literal(RECEIPT_SEQ_SCHEMA_VERSION),
  next: seqSchema,
});
export type ReceiptSeqFile = z.infer<typeof receiptSeqFileSchema>;
