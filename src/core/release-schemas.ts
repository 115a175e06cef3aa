import { z } from 'zod';
import { appNameSchema, epochMsSchema, integritySchema, versionSchema } from './names.js';
import { isLoopbackHost } from './name-checks.js';

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

export const ENV_KEY_RE = /^[A-Z_][A-Z0-9_]{0,127}$/;
const envValueSchema = z
  .string()
  .max(4096)
  .refine((v) => Buffer.byteLength(v, 'utf8') <= 4096, 'env values are at most 4 KiB')
  .refine((v) => !/[\0\n\r]/.test(v), 'env values hold no NUL or newline');


const httpProbeSchema = z
  .string()
  .max(2048)
  .refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'http:' && isLoopbackHost(u.hostname) && u.username === '' && u.password === '';
    } catch {
      return false;
    }
  }, 'health.http must be an http URL on a loopback address');

const tcpProbeSchema = z
  .string()
  .max(256)
  .refine((v) => {
    const m = /^(.+):(\d{1,5})$/.exec(v);
    return !!m && isLoopbackHost(m[1] as string) && Number(m[2]) > 0 && Number(m[2]) < 65536;
  }, 'health.tcp must be a loopback host:port');

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

export const RELEASE_FILE_NAME = 'steward-release.json';
export const MARKER_FILE_NAME = '.steward-valid';
export const MARKER_SCHEMA_VERSION = 1;

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
