import { z } from 'zod';
import { appNameSchema, attemptIdSchema, epochMsSchema, integritySchema, versionSchema } from './names.js';
import { reasonSchema } from './journal-schema.js';
import { envelopeSchema } from './release-schemas.js';
import { RECEIPT_OUTCOMES } from './receipt-check.js';
import { RECEIPT_SEQ_SCHEMA_VERSION, RECEIPTS_FILE_SCHEMA_VERSION } from './receipts-file-check.js';
import { UNKNOWN_APPS_RECEIPTS } from './name-checks.js';

// The constants live in zod-free modules (the helper's receipt store reads and writes without zod).
export { RECEIPT_OUTCOMES, RECEIPT_SEQ_SCHEMA_VERSION, RECEIPTS_FILE_SCHEMA_VERSION };
export type ReceiptOutcome = (typeof RECEIPT_OUTCOMES)[number];

const seqSchema = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

// The signed receipt payload of DESIGN §6, one per update attempt's terminal outcome.
// `nodeId` is null until the host is enrolled. A refusal may lack a version or integrity
// the request never established; any other outcome names the version it was about.
export const receiptPayloadSchema = z
  .strictObject({
    v: z.literal(1),
    nodeId: z.string().max(128).nullable(),
    app: appNameSchema,
    attemptId: attemptIdSchema,
    seq: seqSchema,
    fromVersion: versionSchema.nullable(),
    targetVersion: versionSchema.nullable(),
    integrity: integritySchema.nullable(),
    outcome: z.enum(RECEIPT_OUTCOMES),
    startedAt: epochMsSchema,
    updatedAt: epochMsSchema,
    retryAfter: epochMsSchema.optional(),
    rollbackHealthy: z.boolean().optional(),
    reason: reasonSchema.optional(),
    logFile: z.string().max(4096).optional(),
  })
  .refine((p) => p.outcome === 'refused' || p.targetVersion !== null, {
    message: 'only a refused receipt may lack targetVersion',
    path: ['targetVersion'],
  });
export type ReceiptPayload = z.infer<typeof receiptPayloadSchema>;

// receipts/<app>.json (DESIGN §2): the last receipts of one app, oldest first, plus the
// latest non-refused attempt, whose receipt is never trimmed out of `receipts`.
export const receiptsFileSchema = z.strictObject({
  schemaVersion: z.literal(RECEIPTS_FILE_SCHEMA_VERSION),
  // The app, or UNKNOWN_APPS_RECEIPTS for the file the apps not in the config share.
  app: z.union([appNameSchema, z.literal(UNKNOWN_APPS_RECEIPTS)]),
  lastTransaction: z.strictObject({ attemptId: attemptIdSchema, seq: seqSchema }).nullable(),
  receipts: z.array(envelopeSchema).max(1024),
});
export type ReceiptsFile = z.infer<typeof receiptsFileSchema>;

// state/receipt-seq.json (DESIGN §2): the next receipt seq, never reused.
export const receiptSeqFileSchema = z.strictObject({
  schemaVersion: z.literal(RECEIPT_SEQ_SCHEMA_VERSION),
  next: seqSchema,
});
export type ReceiptSeqFile = z.infer<typeof receiptSeqFileSchema>;
