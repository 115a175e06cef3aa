import { z } from 'zod';
import { TEXTFILE_RE } from './name-checks.js';
import { APP_NAME_RE } from './names.js';

const ms = (max: number) => z.number().int().nonnegative().max(max);

const restartSchema = z.strictObject({
  baseMs: ms(86_400_000).default(5_000),
  capMs: ms(86_400_000).default(300_000),
  maxAttempts: z.number().int().min(1).max(1000).default(5),
  healthyMs: ms(86_400_000).default(600_000),
});

const quarantineSchema = z.strictObject({
  baseMs: ms(86_400_000 * 30).default(300_000),
  capMs: ms(86_400_000 * 30).default(86_400_000),
});

const userNameSchema = z.string().regex(/^[a-z_][a-z0-9_.-]{0,31}$/, 'a POSIX user or group name');

const processAppSchema = z.strictObject({
  runner: z.literal('process'),
  user: userNameSchema.optional(),
  group: userNameSchema.optional(),
  keepReleases: z.number().int().min(2).max(100).default(3),
  restart: restartSchema.default(() => restartSchema.parse({})),
  quarantine: quarantineSchema.default(() => quarantineSchema.parse({})),
  // How long a stopped process gets after SIGTERM before SIGKILL.
  stopTimeoutMs: ms(3_600_000).default(10_000),
  // The cap of the app's log file (detached runner; under systemd journald keeps the output):
  // past it, the helper cuts the file to its newest half.
  logMaxBytes: z.number().int().min(64 * 1024).default(50 * 1024 * 1024),
});

const unitAppSchema = z.strictObject({
  runner: z.literal('unit'),
  unit: z.string().regex(/^[A-Za-z0-9:_.@-]{1,250}\.service$/, 'a systemd unit name ending in .service'),
  keepReleases: z.number().int().min(2).max(100).default(3),
  quarantine: quarantineSchema.default(() => quarantineSchema.parse({})),
});

const appSchema = z.preprocess(
  (v) => (v && typeof v === 'object' && !Array.isArray(v) && !('runner' in v) ? { ...v, runner: 'process' } : v),
  z.discriminatedUnion('runner', [processAppSchema, unitAppSchema]),
);

const apiSchema = z.strictObject({
  idleTimeoutMs: ms(3_600_000).min(100).default(10_000),
  maxConnections: z.number().int().min(2).max(10_000).default(64),
  maxRequestBytes: z.number().int().min(1024).max(1024 * 1024).default(64 * 1024),
});

const fetchSchema = z.strictObject({
  deadlineMs: ms(86_400_000).min(1000).default(600_000),
  minBytesPerSecond: z.number().int().nonnegative().default(1024),
  minSpeedWindowMs: ms(3_600_000).min(100).default(30_000),
  maxRedirects: z.number().int().min(0).max(20).default(5),
  caFile: z.string().min(1).optional(),
  diskReserveBytes: z.number().int().nonnegative().default(10 * 1024 * 1024),
  maxUnsignedBytes: z.number().int().positive().default(2 * 1024 * 1024 * 1024),
});

const extractSchema = z.strictObject({
  maxEntries: z.number().int().positive().default(100_000),
  maxBytes: z.number().int().positive().default(2 * 1024 * 1024 * 1024),
  maxPathLength: z.number().int().positive().max(4096).default(4096),
  maxDepth: z.number().int().positive().max(1024).default(64),
  maxRatio: z.number().int().positive().default(200),
});

const supervisorSchema = z.strictObject({
  // How `process` apps run: as transient units under systemd ("systemd"), as detached children
  // with a log file ("detached"), or "auto": systemd when PID 1 is systemd and the helper is root.
  processRunner: z.enum(['auto', 'systemd', 'detached']).default('auto'),
  // The periodic reconcile pass.
  sweepMs: ms(3_600_000).min(100).default(60_000),
  // How often an adopted process (not the helper's child) is checked.
  pollMs: ms(600_000).min(50).default(2_000),
  // How often the size of a running app's log file is checked against its logMaxBytes.
  logCheckMs: ms(3_600_000).min(100).default(5_000),
});

const controlPlaneSchema = z.strictObject({
  url: z.string().url(),
  caFile: z.string().min(1).optional(),
  insecure: z.boolean().default(false),
});

// metrics.textfile (DESIGN §12): the node_exporter textfile the helper keeps.
const metricsSchema = z.strictObject({
  textfile: z.string().max(4096).regex(TEXTFILE_RE, 'an absolute path ending in <name>.prom').optional(),
});

// The host config of DESIGN §2. Unknown keys are an error at every level.
export const hostConfigSchema = z.strictObject({
  apps: z.record(z.string().regex(APP_NAME_RE, 'app names are [a-z0-9][a-z0-9_-]{0,62}'), appSchema).default({}),
  controlPlane: controlPlaneSchema.optional(),
  api: apiSchema.default(() => apiSchema.parse({})),
  fetch: fetchSchema.default(() => fetchSchema.parse({})),
  extract: extractSchema.default(() => extractSchema.parse({})),
  supervisor: supervisorSchema.default(() => supervisorSchema.parse({})),
  metrics: metricsSchema.optional(),
});

export type HostConfig = z.infer<typeof hostConfigSchema>;
export type AppConfig = HostConfig['apps'][string];
export type ProcessAppConfig = Extract<AppConfig, { runner: 'process' }>;
export type ExtractLimits = HostConfig['extract'];
export type FetchSettings = HostConfig['fetch'];
export type ApiSettings = HostConfig['api'];

export { formatIssues } from './format-issues.js';
