import { z } from 'zod';
import { REASON_CODES } from '../core/errors.js';
import { appNameSchema, attemptIdSchema, integritySchema, versionSchema } from '../core/names.js';
import { envelopeSchema } from '../core/release-schemas.js';

// The local API of DESIGN §7: newline-delimited JSON, one request per connection,
// optionally followed by exactly `upload` raw bytes.
export const PROTOCOL_VERSION = 1;
export const MAX_REQUEST_LINE = 64 * 1024;

// Ops any member of group `steward` may use through helper.sock.
export const HELPER_SOCK_OPS = [
  'status',
  'receipts',
  'releases',
  'stage',
  'update',
  'rollback',
  'start',
  'stop',
  'restart',
  'release-hold',
] as const;
// Ops only root may use, through admin.sock.
export const ADMIN_ONLY_OPS = ['recover', 'prune'] as const;
export const ALL_OPS = [...HELPER_SOCK_OPS, ...ADMIN_ONLY_OPS] as const;
export type OpName = (typeof ALL_OPS)[number];
export type SocketKind = 'helper' | 'admin';

const idSchema = z.union([z.string().max(128), z.number().int().safe()]);

const base = {
  v: z.literal(PROTOCOL_VERSION),
  id: idSchema,
};

// The byte sources of a stage or update request. Exactly one of `path` (admin.sock
// only), `upload` (bytes that follow the request line) or neither (the manifest's url).
const releaseSource = {
  app: appNameSchema,
  version: versionSchema,
  manifest: envelopeSchema.optional(),
  integrity: integritySchema.optional(),
  path: z.string().min(1).max(4096).optional(),
  upload: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
  allowUnsigned: z.boolean().optional(),
  allowDowngrade: z.boolean().optional(),
  force: z.boolean().optional(),
  attemptId: attemptIdSchema.optional(),
};

export const statusRequestSchema = z.strictObject({ ...base, op: z.literal('status'), app: appNameSchema.optional() });
export const releasesRequestSchema = z.strictObject({ ...base, op: z.literal('releases'), app: appNameSchema });
export const stageRequestSchema = z.strictObject({ ...base, op: z.literal('stage'), ...releaseSource });

export const requestSchemas = {
  status: statusRequestSchema,
  releases: releasesRequestSchema,
  stage: stageRequestSchema,
} as const;
export type ImplementedOp = keyof typeof requestSchemas;

export type StatusRequest = z.infer<typeof statusRequestSchema>;
export type ReleasesRequest = z.infer<typeof releasesRequestSchema>;
export type StageRequest = z.infer<typeof stageRequestSchema>;
export type Request = StatusRequest | ReleasesRequest | StageRequest;

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
