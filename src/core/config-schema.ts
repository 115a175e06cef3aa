import * as z from './zod-mini.js';
import { APP_NAME_RE, TEXTFILE_RE } from './name-checks.js';
import { intSchema } from './names.js';
import { controlPlaneUrlSchema } from './control-plane-urls.js';
import { memoryMaxSchema } from './memory-size.js';
import { socketsSchema } from './listen-address.js';

const DAY = 86_400_000;

const restartSchema = z.strictObject({
  baseMs: z._default(intSchema(0, DAY), 5_000),
  capMs: z._default(intSchema(0, DAY), 300_000),
  maxAttempts: z._default(intSchema(1, 1000), 5),
  healthyMs: z._default(intSchema(0, DAY), 600_000),
});

const quarantineSchema = z.strictObject({
  baseMs: z._default(intSchema(0, DAY * 30), 300_000),
  capMs: z._default(intSchema(0, DAY * 30), DAY),
});

const userNameSchema = z.string().check(z.regex(/^[a-z_][a-z0-9_.-]{0,31}$/, 'a POSIX user or group name'));

const processAppSchema = z.strictObject({
  runner: z.literal('process'),
  user: z.optional(userNameSchema),
  group: z.optional(userNameSchema),
  keepReleases: z._default(intSchema(2, 100), 3),
  restart: z._default(restartSchema, () => restartSchema.parse({})),
  quarantine: z._default(quarantineSchema, () => quarantineSchema.parse({})),
  // How long a stopped process gets after SIGTERM before SIGKILL.
  stopTimeoutMs: z._default(intSchema(0, 3_600_000), 10_000),
  // The cap of the app's log file (detached runner; under systemd journald keeps the output):
  // past it, the helper cuts the file to its newest half.
  logMaxBytes: z._default(intSchema(64 * 1024), 50 * 1024 * 1024),
  // Whether this app's rolled-back and failed receipts carry its last log lines (default: the
  // host's `logTail`). App logs may hold secrets: false keeps them on the host.
  logTail: z.optional(z.boolean()),
  // The app's memory limit in bytes (a number, or "512M"; at least 1M), held by its cgroup or
  // unit; absent: none (docs/design.md §17 "Memory"). Read only by steward from the release that
  // brought it: an older helper or agent refuses the whole file (docs/host.md).
  memoryMax: z.optional(memoryMaxSchema),
  // The listening sockets the helper binds and hands to each process of the app (LISTEN_FDS), so
  // that an update starts the new version beside the old on them and drops no connection
  // (docs/design.md §17 "Zero-downtime handover"); the release must ask for start.ready "fd".
  // Read only by steward from the release that brought it, like memoryMax.
  sockets: z.optional(socketsSchema),
});

const unitAppSchema = z.strictObject({
  runner: z.literal('unit'),
  unit: z.string().check(z.regex(/^[A-Za-z0-9:_.@-]{1,250}\.service$/, 'a systemd unit name ending in .service')),
  keepReleases: z._default(intSchema(2, 100), 3),
  quarantine: z._default(quarantineSchema, () => quarantineSchema.parse({})),
  logTail: z.optional(z.boolean()),
});

// The app `steward`, steward's own code (docs/design.md §14): its releases go through the launcher's
// trial (docs/self-update.md); `unit` is the helper's own unit, which a handover restarts.
const selfAppSchema = z.strictObject({
  runner: z.literal('self'),
  unit: z._default(z.string().check(z.regex(/^[A-Za-z0-9:_.@-]{1,250}\.service$/, 'a systemd unit name ending in .service')), 'steward-helper.service'),
  keepReleases: z._default(intSchema(2, 100), 3),
  quarantine: z._default(quarantineSchema, () => quarantineSchema.parse({})),
  // How long the candidate must stay up, its self-probe passed, before it commits.
  stableMs: z._default(intSchema(0, 3_600_000), 5_000),
  // How long the candidate waits, when the host is enrolled, for the round trip with the agent:
  // the agent's own process confirming over helper.sock a heartbeat the control plane answered
  // (it confirms once to each new helper, after its next heartbeat: above its interval).
  agentTimeoutMs: z._default(intSchema(0, 3_600_000), 120_000),
  // How long the old helper waits, `candidate` written and the restart asked for, for systemd to
  // stop it; then it withdraws the handover (handover.ts).
  handoverTimeoutMs: z._default(intSchema(1000, 3_600_000), 120_000),
  logTail: z.optional(z.boolean()),
});

// An app without `runner` is a process app.
const appSchema = z.pipe(
  z.transform((v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) && !('runner' in v) ? { ...v, runner: 'process' } : v)),
  z.discriminatedUnion('runner', [processAppSchema, unitAppSchema, selfAppSchema]),
);

const apiSchema = z.strictObject({
  idleTimeoutMs: z._default(intSchema(100, 3_600_000), 10_000),
  maxConnections: z._default(intSchema(2, 10_000), 64),
  maxRequestBytes: z._default(intSchema(1024, 1024 * 1024), 64 * 1024),
});

const fetchSchema = z.strictObject({
  deadlineMs: z._default(intSchema(1000, DAY), 600_000),
  minBytesPerSecond: z._default(intSchema(0), 1024),
  minSpeedWindowMs: z._default(intSchema(100, 3_600_000), 30_000),
  maxRedirects: z._default(intSchema(0, 20), 5),
  caFile: z.optional(z.string().check(z.minLength(1))),
  diskReserveBytes: z._default(intSchema(0), 10 * 1024 * 1024),
  maxUnsignedBytes: z._default(intSchema(1), 2 * 1024 * 1024 * 1024),
});

const extractSchema = z.strictObject({
  maxEntries: z._default(intSchema(1), 100_000),
  maxBytes: z._default(intSchema(1), 2 * 1024 * 1024 * 1024),
  maxPathLength: z._default(intSchema(1, 4096), 4096),
  maxDepth: z._default(intSchema(1, 1024), 64),
  maxRatio: z._default(intSchema(1), 200),
});

const supervisorSchema = z.strictObject({
  // How `process` apps run: as transient units under systemd ("systemd"), as detached children
  // with a log file ("detached"), or "auto": systemd when PID 1 is systemd and the helper is root.
  processRunner: z._default(z.enum(['auto', 'systemd', 'detached']), 'auto'),
  // The periodic reconcile pass.
  sweepMs: z._default(intSchema(100, 3_600_000), 60_000),
  // How often an adopted process (not the helper's child) is checked.
  pollMs: z._default(intSchema(50, 600_000), 2_000),
  // How often the size of a running app's log file is checked against its logMaxBytes.
  logCheckMs: z._default(intSchema(100, 3_600_000), 5_000),
});

const controlPlaneSchema = z.strictObject({
  // One URL, or a list tried in order (docs/design.md §13). A list is read only by steward from this
  // version on: an older agent or helper refuses the whole file (docs/agent.md).
  url: controlPlaneUrlSchema,
  caFile: z.optional(z.string().check(z.minLength(1))),
  insecure: z._default(z.boolean(), false),
  // The agent's deadline for the whole answer of GET /v1/trust/bundle (docs/agent.md): a control
  // plane that dribbles it, or never ends it, is given up on after this long.
  trustBundleTimeoutMs: z.optional(intSchema(1_000, 300_000)),
});

// metrics.textfile (docs/design.md §12): the node_exporter textfile the helper keeps.
const metricsSchema = z.strictObject({
  textfile: z.optional(z.string().check(z.maxLength(4096), z.regex(TEXTFILE_RE, 'an absolute path ending in <name>.prom'))),
});

// The host config of docs/design.md §2. Unknown keys are an error at every level.
export const hostConfigSchema = z.strictObject({
  apps: z._default(z.record(z.string().check(z.regex(APP_NAME_RE, 'app names are [a-z0-9][a-z0-9_-]{0,62}')), appSchema), {}),
  controlPlane: z.optional(controlPlaneSchema),
  api: z._default(apiSchema, () => apiSchema.parse({})),
  fetch: z._default(fetchSchema, () => fetchSchema.parse({})),
  extract: z._default(extractSchema, () => extractSchema.parse({})),
  supervisor: z._default(supervisorSchema, () => supervisorSchema.parse({})),
  metrics: z.optional(metricsSchema),
  // docs/design.md §12: rolled-back and failed receipts carry the failed version's last log lines (at
  // most 8 KiB), shown to the fleet's operators; false leaves them out for every app.
  logTail: z._default(z.boolean(), true),
});

export type HostConfig = z.infer<typeof hostConfigSchema>;
export type AppConfig = HostConfig['apps'][string];
export type ProcessAppConfig = Extract<AppConfig, { runner: 'process' }>;
export type SelfAppConfig = Extract<AppConfig, { runner: 'self' }>;
export type ExtractLimits = HostConfig['extract'];
export type FetchSettings = HostConfig['fetch'];
export type ApiSettings = HostConfig['api'];
