import { z } from 'zod';
import { appNameSchema, epochMsSchema, integritySchema, versionSchema } from './names.js';
import { isLoopbackHost } from './name-checks.js';
import { ENV_KEY_RE, isLoopbackHostPort, isLoopbackHttpUrl, MARKER_SCHEMA_VERSION } from './release-check.js';

// The zod-free checkers of release-check.ts mirror these schemas; the constants live there.
export { ENV_KEY_RE, MARKER_FILE_NAME, MARKER_SCHEMA_VERSION, RELEASE_FILE_NAME } from './release-check.js';

// The signed release manifest of DESIGN §1: {name, version, url, size, integrity, expires}.
export const manifestPayloadSchema = z.strictObject({
  name: appNameSchema,
  version: versionSchema,
  url: z.string().min(1).max(4096),
  size: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  integrity: integritySchema,
  expires: epochMsSchema,
});
export type ManifestPayload = z.infer<typeof manifestPayloadSchema>;

// The signature envelope of DESIGN §6.
export const envelopeSchema = z.strictObject({
  payload: z.string().min(1).max(48 * 1024),
  sig: z.string().min(1).max(256),
  keyId: z.string().regex(/^[0-9a-f]{16}$/, 'keyId is 16 lowercase hex characters'),
});
export type Envelope = z.infer<typeof envelopeSchema>;

const envValueSchema = z
  .string()
  .max(4096)
  .refine((v) => Buffer.byteLength(v, 'utf8') <= 4096, 'env values are at most 4 KiB')
  .refine((v) => !/[\0\n\r]/.test(v), 'env values hold no NUL or newline');


const httpProbeSchema = z
  .string()
  .max(2048)
  .refine(isLoopbackHttpUrl, 'health.http must be an http URL on a loopback address');

const tcpProbeSchema = z
  .string()
  .max(256)
  .refine(isLoopbackHostPort, 'health.tcp must be a loopback host:port');

const healthSchema = z
  .strictObject({
    http: httpProbeSchema.optional(),
    tcp: tcpProbeSchema.optional(),
    timeoutMs: z.number().int().positive().max(3_600_000).default(30_000),
    stableMs: z.number().int().nonnegative().max(3_600_000).default(5_000),
  })
  .refine((h) => !(h.http && h.tcp), 'health has at most one of http and tcp');

// steward-release.json at the root of a release tarball (DESIGN §3).
export const releaseFileSchema = z.strictObject({
  name: appNameSchema,
  version: versionSchema,
  start: z
    .strictObject({
      command: z.array(z.string().min(1).max(4096).refine((v) => !v.includes('\0'), 'no NUL')).min(1).max(256),
      env: z.record(z.string().regex(ENV_KEY_RE, 'env keys match ^[A-Z_][A-Z0-9_]{0,127}$'), envValueSchema).default({}),
    })
    .optional(),
  health: healthSchema.optional(),
});
export type ReleaseFile = z.infer<typeof releaseFileSchema>;

// The `.steward-valid` marker, written last into a staged tree and removed first.
export const markerSchema = z.strictObject({
  schemaVersion: z.literal(MARKER_SCHEMA_VERSION),
  tarballIntegrity: integritySchema,
  treeDigest: z.string().regex(/^sha256-[A-Za-z0-9+/]{43}=$/),
  signed: z.boolean(),
  keyId: z.string().regex(/^[0-9a-f]{16}$/).nullable(),
  version: versionSchema,
  stagedAt: epochMsSchema,
});
export type Marker = z.infer<typeof markerSchema>;

export { isLoopbackHost };
