import * as z from './zod-mini.js';
import { appNameSchema, epochMsSchema, integritySchema, intSchema, keyIdSchema, versionSchema } from './names.js';
import { isLoopbackHost } from './name-checks.js';
import { MARKER_SCHEMA_VERSION } from './release-files.js';
import { isMetricSelector } from './metric-selector.js';

export { MARKER_FILE_NAME, MARKER_SCHEMA_VERSION, RELEASE_FILE_NAME } from './release-files.js';
export const ENV_KEY_RE = /^[A-Z_][A-Z0-9_]{0,127}$/;

// health.http's rule: a URL that parses, plain http, a loopback host, no credentials.
export function isLoopbackHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return u.protocol === 'http:' && isLoopbackHost(u.hostname) && u.username === '' && u.password === '';
  } catch {
    return false;
  }
}

// health.tcp's rule: loopback host:port, the port 1..65535.
export function isLoopbackHostPort(v: string): boolean {
  const m = /^(.+):(\d{1,5})$/.exec(v);
  return !!m && isLoopbackHost(m[1] as string) && Number(m[2]) > 0 && Number(m[2]) < 65536;
}

// metrics.url's rule (docs/design.md §19): plain http to 127.0.0.1, [::1] or localhost (which the
// agent maps to 127.0.0.1, resolving nothing), an explicit port, a path, no credentials. Stricter
// than health.http: the agent, not the helper, fetches it, and follows nothing off loopback.
export function isMetricsUrl(v: string): boolean {
  if (v.length > 2048 || !/^http:\/\/(127\.0\.0\.1|\[::1\]|localhost):\d{1,5}\//.test(v)) return false;
  try {
    const u = new URL(v);
    const port = Number(u.port);
    return u.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(u.hostname) && port > 0 && port < 65536 && u.username === '' && u.password === '';
  } catch {
    return false;
  }
}

// A release's own request and error counters (docs/design.md §19), scraped by the agent each
// heartbeat interval: each a metric name with an optional label matcher (src/core/metric-selector.ts).
export const metricsSchema = z.strictObject({
  url: z.string().check(z.refine(isMetricsUrl, 'metrics.url must be http://127.0.0.1, http://[::1] or http://localhost with a port and a path (loopback only)')),
  requests: z.string().check(z.refine(isMetricSelector, 'metrics.requests must be a Prometheus metric name with an optional label matcher, like http_requests_total{code!~"5.."}')),
  errors: z.string().check(z.refine(isMetricSelector, 'metrics.errors must be a Prometheus metric name with an optional label matcher, like http_requests_total{code=~"5.."}')),
});
export type ReleaseMetrics = z.infer<typeof metricsSchema>;

// The signed release manifest of docs/design.md §1: {name, version, url, size, integrity, expires}.
export const manifestPayloadSchema = z.strictObject({
  name: appNameSchema,
  version: versionSchema,
  url: z.string().check(z.minLength(1), z.maxLength(4096)),
  size: intSchema(1),
  integrity: integritySchema,
  expires: epochMsSchema,
  // The release's file index (docs/design.md §20): where it is (a URL, or a path under
  // /v1/artifacts/ tried at each control plane, as `url` is), its integrity and size. Optional: a
  // manifest without it stages from the tarball. A helper from before §20 refuses a manifest that
  // has it (this schema is strict), so `release add` signs it only when asked (--index).
  index: z.optional(
    z.strictObject({
      url: z.string().check(z.minLength(1), z.maxLength(4096)),
      integrity: integritySchema,
      size: intSchema(1, 64 * 1024 * 1024),
    }),
  ),
});
export type ManifestPayload = z.infer<typeof manifestPayloadSchema>;

// The signature envelope of docs/design.md §6.
export const envelopeSchema = z.strictObject({
  payload: z.string().check(z.minLength(1), z.maxLength(48 * 1024)),
  sig: z.string().check(z.minLength(1), z.maxLength(256)),
  keyId: keyIdSchema,
});
export type Envelope = z.infer<typeof envelopeSchema>;

const envValueSchema = z
  .string()
  .check(
    z.maxLength(4096),
    z.refine((v) => Buffer.byteLength(v, 'utf8') <= 4096, 'env values are at most 4 KiB'),
    z.refine((v) => !/[\0\n\r]/.test(v), 'env values hold no NUL or newline'),
  );

const httpProbeSchema = z.string().check(z.maxLength(2048), z.refine(isLoopbackHttpUrl, 'health.http must be an http URL on a loopback address'));

const tcpProbeSchema = z.string().check(z.maxLength(256), z.refine(isLoopbackHostPort, 'health.tcp must be a loopback host:port'));

const healthSchema = z
  .strictObject({
    http: z.optional(httpProbeSchema),
    tcp: z.optional(tcpProbeSchema),
    timeoutMs: z._default(intSchema(1, 3_600_000), 30_000),
    stableMs: z._default(intSchema(0, 3_600_000), 5_000),
    // "heartbeat" (steward-agent only, docs/design.md §14): the probe's first success is the new agent's
    // confirm over helper.sock of a heartbeat the control plane answered 2xx.
    confirm: z.optional(z.literal('heartbeat')),
    // The watch window after `active` (docs/design.md §17): how long (default 5 min, 0 turns it off;
    // a rollout's bake overrides it) and how many exits it takes (default 2: the third rolls back).
    // Optional without defaults, so a manifest without them reads as it always did.
    watchMs: z.optional(intSchema(0, 86_400_000)),
    watchMaxRestarts: z.optional(intSchema(0, 1000)),
    // Liveness (docs/design.md §17): the same http or tcp check, for a running app from `active` on,
    // every intervalMs; failureThreshold failures in a row roll back within a watch window, and
    // restart the app outside one.
    liveness: z.optional(
      z.strictObject({
        intervalMs: z._default(intSchema(100, 3_600_000), 10_000),
        failureThreshold: z._default(intSchema(1, 100), 3),
        timeoutMs: z._default(intSchema(1, 60_000), 2_000),
      }),
    ),
  })
  .check(
    z.refine((h) => !h.liveness || Boolean(h.http || h.tcp), 'health.liveness needs health.http or health.tcp'),
    z.refine((h) => !(h.http && h.tcp), 'health has at most one of http and tcp'),
    z.refine((h) => !(h.confirm && (h.http || h.tcp)), 'health.confirm takes no http or tcp'),
  );

// start.watchdogMs: whole milliseconds from 100 ms (a timer's tick on a busy host is not finer) to an
// hour (a watchdog that slow catches nothing a liveness check would not).
export const WATCHDOG_MIN_MS = 100;
export const WATCHDOG_MAX_MS = 3_600_000;
const watchdogMsSchema = z
  .number()
  .check(
    z.refine((v) => Number.isInteger(v) && v >= WATCHDOG_MIN_MS && v <= WATCHDOG_MAX_MS, `start.watchdogMs must be a whole number of milliseconds from ${WATCHDOG_MIN_MS} to ${WATCHDOG_MAX_MS} (an hour)`),
  );

// steward-release.json at the root of a release tarball (docs/design.md §3).
export const releaseFileSchema = z.strictObject({
  name: appNameSchema,
  version: versionSchema,
  start: z.optional(
    z.strictObject({
      command: z
        .array(z.string().check(z.minLength(1), z.maxLength(4096), z.refine((v) => !v.includes('\0'), 'no NUL')))
        .check(z.minLength(1), z.maxLength(256)),
      env: z._default(z.record(z.string().check(z.regex(ENV_KEY_RE, 'env keys match ^[A-Z_][A-Z0-9_]{0,127}$')), envValueSchema), {}),
      // Readiness (docs/design.md §17, docs/app-contract.md): the app gets STEWARD_READY_FD and writes
      // one newline on it when it is ready; an activation waits for it before its health check.
      ready: z.optional(z.literal('fd')),
      // The watchdog (docs/design.md §17): the app gets STEWARD_WATCHDOG_FD and writes a newline at
      // least every watchdogMs / 2 ms; a process silent for longer is killed (reason WATCHDOG).
      watchdogMs: z.optional(watchdogMsSchema),
    }),
  ),
  health: z.optional(healthSchema),
  // The app's own counters for canary analysis (docs/design.md §19); a helper from before refuses the key.
  metrics: z.optional(metricsSchema),
});
export type ReleaseFile = z.infer<typeof releaseFileSchema>;

// The `.steward-valid` marker, written last into a staged tree and removed first.
export const markerSchema = z.strictObject({
  schemaVersion: z.literal(MARKER_SCHEMA_VERSION),
  tarballIntegrity: integritySchema,
  treeDigest: z.string().check(z.regex(/^sha256-[A-Za-z0-9+/]{43}=$/)),
  signed: z.boolean(),
  keyId: z.nullable(z.string().check(z.regex(/^[0-9a-f]{16}$/))),
  version: versionSchema,
  stagedAt: epochMsSchema,
});
export type Marker = z.infer<typeof markerSchema>;

export { isLoopbackHost };
