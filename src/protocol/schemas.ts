import { z } from 'zod';
import { PLAIN_TEXT_RE } from '../core/control-chars.js';
import { REASON_CODES } from '../core/errors.js';
import { appNameSchema, attemptIdSchema, integritySchema, versionSchema } from '../core/names.js';
import { envelopeSchema, type Envelope } from '../core/release-schemas.js';
import { PROTOCOL_VERSION } from './ops.js';

// The local API of DESIGN §7: newline-delimited JSON, one request per connection,
// optionally followed by exactly `upload` raw bytes. The op names and limits are in ops.ts
// (zod-free); request-check.ts checks requests without zod, held to these schemas.
export { ADMIN_ONLY_OPS, ALL_OPS, HELPER_SOCK_OPS, MAX_REQUEST_LINE, PROTOCOL_VERSION, type OpName, type SocketKind } from './ops.js';

const idSchema = z.union([z.string().max(128), z.number().int().safe()]);

// What every request has, whatever its op: checked before the op's own schema.
export const requestEnvelopeSchema = z.looseObject({
  v: z.literal(PROTOCOL_VERSION),
  id: idSchema,
  op: z.string().max(64),
});

const base = {
  v: z.literal(PROTOCOL_VERSION),
  id: idSchema,
};

// The byte sources of a stage or update request. Exactly one of `path` (admin.sock
// only), `upload` (bytes that follow the request line) or neither (the manifest's url).
const releaseSource = {
  app: appNameSchema,
  version: versionSchema,
  manifest: z.optional(envelopeSchema),
  integrity: z.optional(integritySchema),
  path: z.string().min(1).max(4096).optional(),
  upload: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
  allowUnsigned: z.boolean().optional(),
  allowDowngrade: z.boolean().optional(),
  force: z.boolean().optional(),
  attemptId: z.optional(attemptIdSchema),
};

export const statusRequestSchema = z.strictObject({ ...base, op: z.literal('status'), app: z.optional(appNameSchema) });
export const releasesRequestSchema = z.strictObject({ ...base, op: z.literal('releases'), app: appNameSchema });
export const stageRequestSchema = z.strictObject({ ...base, op: z.literal('stage'), ...releaseSource });
export const receiptsRequestSchema = z.strictObject({ ...base, op: z.literal('receipts'), app: z.optional(appNameSchema) });

// Who the client says it is: kept so that older clients' requests parse, and ignored: a hold's
// `by` is the peer's credentials (DESIGN §4). Text with control characters is refused.
const whoSchema = z.string().max(128).regex(PLAIN_TEXT_RE, 'no control characters').optional();

export const updateRequestSchema = z.strictObject({
  ...base,
  op: z.literal('update'),
  ...releaseSource,
  noWait: z.boolean().optional(),
  by: whoSchema,
});
export const rollbackRequestSchema = z.strictObject({
  ...base,
  op: z.literal('rollback'),
  app: appNameSchema,
  to: z.optional(versionSchema),
  attemptId: z.optional(attemptIdSchema),
  noWait: z.boolean().optional(),
  by: whoSchema,
});
export const recoverRequestSchema = z.strictObject({
  ...base,
  op: z.literal('recover'),
  app: appNameSchema,
  to: z.optional(versionSchema),
  attemptId: z.optional(attemptIdSchema),
  by: whoSchema,
});
export const pruneRequestSchema = z.strictObject({
  ...base,
  op: z.literal('prune'),
  app: appNameSchema,
  keep: z.number().int().min(2).max(100).optional(),
});
export const releaseHoldRequestSchema = z.strictObject({ ...base, op: z.literal('release-hold'), app: appNameSchema });

const runStateRequest = <T extends 'start' | 'stop' | 'restart'>(op: T) =>
  z.strictObject({ ...base, op: z.literal(op), app: appNameSchema, by: whoSchema });
export const startRequestSchema = runStateRequest('start');
export const stopRequestSchema = runStateRequest('stop');
export const restartRequestSchema = runStateRequest('restart');

export const requestSchemas = {
  start: startRequestSchema,
  stop: stopRequestSchema,
  restart: restartRequestSchema,
  update: updateRequestSchema,
  rollback: rollbackRequestSchema,
  recover: recoverRequestSchema,
  prune: pruneRequestSchema,
  'release-hold': releaseHoldRequestSchema,
  status: statusRequestSchema,
  releases: releasesRequestSchema,
  stage: stageRequestSchema,
  receipts: receiptsRequestSchema,
} as const;
export type ImplementedOp = keyof typeof requestSchemas;

export type StatusRequest = z.infer<typeof statusRequestSchema>;
export type ReleasesRequest = z.infer<typeof releasesRequestSchema>;
export type StageRequest = z.infer<typeof stageRequestSchema>;
export type ReceiptsRequest = z.infer<typeof receiptsRequestSchema>;
export type UpdateRequest = z.infer<typeof updateRequestSchema>;
export type RollbackRequest = z.infer<typeof rollbackRequestSchema>;
export type RecoverRequest = z.infer<typeof recoverRequestSchema>;
export type PruneRequest = z.infer<typeof pruneRequestSchema>;
export type ReleaseHoldRequest = z.infer<typeof releaseHoldRequestSchema>;
export type RunStateRequest = z.infer<typeof startRequestSchema> | z.infer<typeof stopRequestSchema> | z.infer<typeof restartRequestSchema>;
export type Request =
  | RunStateRequest
  | StatusRequest
  | ReleasesRequest
  | StageRequest
  | ReceiptsRequest
  | UpdateRequest
  | RollbackRequest
  | RecoverRequest
  | PruneRequest
  | ReleaseHoldRequest;

// What update, rollback and recover answer: the attempt's terminal outcome with its receipt,
// or, with noWait, that it was accepted.
export interface UpdateAnswer {
  attemptId: string;
  app: string;
  outcome: 'active' | 'rolled-back' | 'failed' | 'refused';
  fromVersion: string | null;
  targetVersion: string | null;
  reason?: { code: string; message: string };
  retryAfter?: number;
  logFile?: string;
  receipt: Envelope | null;
  // True when answered from an earlier attempt's receipt (a retried attemptId).
  settled?: boolean;
}
export interface AcceptedAnswer {
  attemptId: string;
  app: string;
  accepted: true;
}

export const progressEventSchema = z.object({
  id: idSchema.nullable(),
  event: z.literal('progress'),
  attemptId: z.string(),
  phase: z.string(),
  bytes: z.number().optional(),
  total: z.number().optional(),
});
export type ProgressEvent = z.infer<typeof progressEventSchema>;

export const errorBodySchema = z.object({
  code: z.enum(REASON_CODES as unknown as [string, ...string[]]),
  message: z.string(),
  attemptId: z.string().optional(),
});
export type ErrorBody = z.infer<typeof errorBodySchema>;

export const responseSchema = z.union([
  z.object({ id: idSchema.nullable(), ok: z.literal(true), result: z.unknown() }),
  z.object({ id: idSchema.nullable(), ok: z.literal(false), error: errorBodySchema }),
]);
export type Response = z.infer<typeof responseSchema>;

// What the stage op answers.
export interface StageResult {
  app: string;
  version: string;
  attemptId: string;
  reused: boolean;
  path: string;
  signed: boolean;
  keyId: string | null;
  tarballIntegrity: string;
  treeDigest: string;
  entries?: number;
  bytes?: number;
}
