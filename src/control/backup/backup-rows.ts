// What each column of the store may hold, checked on every row a restore reads before it goes
// into the target: the type its column has on both backends, the bounds the code that writes it
// keeps, and for a JSON column the text parsed and checked with the schema the store's readers
// expect (the heartbeat's app schema, labels, the signature envelope, rollout windows). A row
// that holds anything else did not come from a steward-control: BACKUP_INVALID naming the
// table, row and column, before the row reaches the database or any reader that would choke on
// it later (a receipts page answering 500).
//
// Every column of the newest schema is named here (test/security/backup-altered-and-resigned.test.ts
// checks it against both backends' tables): a column added by a migration is added here too.
import { runAnalysisSchema } from '../../core/run-analysis.js';
import { envelopeSchema, manifestPayloadSchema } from '../../core/release-schemas.js';
import { heartbeatAppSchema, MAX_HEARTBEAT_APPS, trustReportSchema } from '../../core/heartbeat-schema.js';
import { receiptPayloadSchema } from '../../core/receipt-schema.js';
import { downgradePayloadSchema } from '../../core/downgrade-schema.js';
import { strictBase64 } from '../../platform/keys.js';
import { labelsSchema } from '../../core/control-api.js';
import { isAppName, isVersion } from '../../core/names.js';
import { parseWindow } from '../../core/windows.js';
import * as z from '../../core/zod-mini.js';
import type { Scalar } from '../store/bulk.js';
import { targetPolicySchema } from '../store/target-policy.js';

// The longest text a column holds: a node's apps (a heartbeat body is at most 1 MiB) bounds them all.
export const MAX_FIELD_CHARS = 1024 * 1024;

type Check = (v: Scalar) => string | null;

const text =
  (max = 4096, ok?: (s: string) => boolean, what?: string): Check =>
  (v) => {
    if (typeof v !== 'string') return `${describe(v)}, not text`;
    if (v.length > max) return `${v.length} characters of text, more than its ${max}`;
    if (ok && !ok(v)) return `${JSON.stringify(v.slice(0, 80))}, not ${what}`;
    return null;
  };
const int: Check = (v) => (typeof v === 'number' && Number.isSafeInteger(v) ? null : `${describe(v)}, not an integer`);
// PostgreSQL's booleans travel as booleans, SQLite's as 0 or 1.
const bool: Check = (v) => (typeof v === 'boolean' || v === 0 || v === 1 ? null : `${describe(v)}, not a boolean`);
const oneOf = (values: readonly string[]): Check => text(64, (s) => values.includes(s), `one of ${values.join(', ')}`);
const nullable =
  (c: Check): Check =>
  (v) =>
    v === null ? null : c(v);

// JSON text whose value `schema` accepts.
const json =
  (schema: { safeParse(v: unknown): { success: boolean; error?: { issues?: Array<{ message: string; path: PropertyKey[] }> } } }, what: string): Check =>
  (v) => {
    const t = text(MAX_FIELD_CHARS)(v);
    if (t !== null) return t;
    let parsed: unknown;
    try {
      parsed = JSON.parse(v as string);
    } catch {
      return `text that is not JSON, where ${what} belongs`;
    }
    const r = schema.safeParse(parsed);
    if (r.success) return null;
    const issue = r.error?.issues?.[0];
    return `JSON that is not ${what}${issue ? ` (${issue.path.map(String).join('.') || 'value'}: ${issue.message})` : ''}`;
  };

type Schema = Parameters<typeof json>[0];

// A signed envelope (JSON) whose payload, base64 of JSON, `payload` accepts: what the receipts
// and releases pages decode.
const signed =
  (payload: Schema, what: string): Check =>
  (v) => {
    const envelope = json(envelopeSchema, 'a signed envelope')(v);
    if (envelope !== null) return envelope;
    const bytes = strictBase64((JSON.parse(v as string) as { payload: string }).payload);
    if (bytes === null) return `a signed envelope whose payload is not base64`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString('utf8'));
    } catch {
      return `a signed envelope whose payload is not JSON`;
    }
    const r = payload.safeParse(parsed);
    if (r.success) return null;
    const issue = r.error?.issues?.[0];
    return `a signed envelope whose payload is not ${what}${issue ? ` (${issue.path.map(String).join('.') || 'value'}: ${issue.message})` : ''}`;
  };

const hex64 = text(64, (s) => /^[0-9a-f]{64}$/.test(s), 'a sha256 in hex');
const appName = text(64, isAppName, 'an app name');
const version = text(256, isVersion, 'a version');
const nodeId = text(128, (s) => s.length > 0, 'a node id');
const pem = text(4096);
const windowsSchema = z.array(
  z.string().check(
    z.refine((s) => {
      try {
        parseWindow(s);
        return true;
      } catch {
        return false;
      }
    }, 'a rollout window'),
  ),
);
const objectSchema = z.record(z.string(), z.unknown());

export const COLUMNS: Readonly<Record<string, Readonly<Record<string, Check>>>> = {
  settings: { key: text(128, (s) => s.length > 0, 'a setting name'), value: text(65536) },
  tokens: {
    hash: hex64,
    createdAt: int,
    expiresAt: int,
    usedAt: nullable(int),
    usedBy: nullable(text(128)),
    id: nullable(text(64)),
    labels: json(labelsSchema, 'labels'),
    revokedAt: nullable(int),
  },
  nodes: {
    nodeId,
    hostname: text(255),
    nodePublicKey: pem,
    helperPublicKey: pem,
    enrolledAt: int,
    lastSeq: int,
    lastHeartbeatAt: nullable(int),
    apps: json(z.array(heartbeatAppSchema).check(z.maxLength(MAX_HEARTBEAT_APPS)), "a heartbeat's apps"),
    bootId: nullable(text(128)),
    agentVersion: nullable(text(256)),
    labels: json(labelsSchema, 'labels'),
    clockSkewMs: nullable(int),
    skewRefusedSince: nullable(int),
    skewRefusedAt: nullable(int),
    skewRefusedMs: nullable(int),
    trust: nullable(json(trustReportSchema, "a heartbeat's trust report")),
    trustAt: nullable(int),
  },
  receipts: {
    nodeId,
    seq: int,
    app: appName,
    attemptId: text(128),
    outcome: text(64),
    reasonCode: nullable(text(64)),
    fromVersion: nullable(text(256)),
    targetVersion: nullable(text(256)),
    updatedAt: int,
    receivedAt: int,
    counts: bool,
    envelope: signed(receiptPayloadSchema, 'a receipt'),
  },
  releases: {
    app: appName,
    version,
    manifest: signed(manifestPayloadSchema, 'a release manifest'),
    integrity: text(128, (s) => /^sha512-[A-Za-z0-9+/]{86}==$/.test(s), 'a sha512 integrity'),
    size: int,
    expires: int,
    artifactPath: nullable(text(4096)),
    addedAt: int,
    keyId: text(64),
    indexedManifest: nullable(signed(manifestPayloadSchema, 'a release manifest')),
  },
  app_keys: { app: appName, keyId: text(64), addedAt: int },
  downgrades: { app: appName, version, keyId: text(64), notAfter: int, envelope: signed(downgradePayloadSchema, 'a downgrade authorization'), addedAt: int },
  runs: {
    id: int,
    app: appName,
    version,
    startedAt: int,
    canary: nullable(text(128)),
    batchSize: int,
    verdictTimeoutMs: int,
    allowRetryReverted: bool,
    heartbeatIntervalMs: int,
    stopped: bool,
    status: oneOf(['running', 'succeeded', 'halted', 'stopped']),
    haltCode: nullable(text(64)),
    haltNodeId: nullable(text(128)),
    haltMessage: nullable(text(65536)),
    endedAt: nullable(int),
    selector: text(),
    canaries: int,
    namedCanaries: json(z.array(z.string().check(z.maxLength(128))), 'a list of node ids'),
    canarySeed: int,
    batch: text(16),
    bakeMs: int,
    maxFailures: int,
    maxRefused: text(16),
    maxFetchFailures: text(16),
    failuresCarried: int,
    windows: json(windowsSchema, 'a list of rollout windows'),
    tz: text(64),
    startAt: nullable(int),
    paused: bool,
    behind: bool,
    retryOf: nullable(int),
    analysis: nullable(json(runAnalysisSchema, "a run's analysis")),
  },
  run_judgements: {
    runId: int,
    step: int,
    at: int,
    mode: oneOf(['observe', 'enforce']),
    verdict: oneOf(['pass', 'fail', 'inconclusive']),
    windowFrom: int,
    windowTo: int,
    judgement: json(objectSchema, 'a JSON object'),
    resumedAt: nullable(int),
    resumedBy: nullable(text(256)),
  },
  run_nodes: { runId: int, nodeId, lastHeartbeatAt: nullable(int), listedApp: bool },
  issued: { runId: int, nodeId, attemptId: text(128), issuedAt: int, notAfter: nullable(int), batch: int },
  operators: {
    name: text(64, (s) => s.length > 0, 'an operator name'),
    role: oneOf(['viewer', 'operator', 'admin']),
    tokenHash: hex64,
    createdAt: int,
    rotatedAt: nullable(int),
  },
  sessions: { hash: hex64, operator: text(64), createdAt: int, lastSeenAt: int, expiresAt: int },
  auth_failures: { source: text(256), failures: int, lastAt: int },
  targets: {
    name: text(64, (s) => s.length > 0, 'a target name'),
    app: appName,
    version,
    priority: int,
    policy: json(targetPolicySchema, "a target's run policy"),
    paused: bool,
    setAt: int,
    setBy: nullable(text(256)),
    clearedRunId: int,
    analysis: nullable(json(runAnalysisSchema, "a target's analysis")),
  },
  run_owners: { runId: int, kind: oneOf(['target', 'revert', 'pin']), target: nullable(text(64)) },
  pins: { nodeId, app: appName, version, by: nullable(text(256)), reason: text(1024), at: int, until: nullable(int), runId: nullable(int) },
  // A backup holds each hook's secret, as the database does: it is as secret as the database.
  hooks: {
    name: text(64, (s) => s.length > 0, 'a hook name'),
    url: text(2048, (s) => /^https?:\/\//.test(s), 'an http(s) URL'),
    events: json(z.array(z.string().check(z.maxLength(64))).check(z.maxLength(64)), 'a list of event types'),
    secret: text(4096, (s) => s.length > 0, 'a secret'),
    createdAt: int,
    createdBy: nullable(text(256)),
  },
  hook_deliveries: {
    id: int,
    hook: text(64),
    eventId: text(128),
    type: text(128),
    body: text(MAX_FIELD_CHARS),
    createdAt: int,
    state: oneOf(['pending', 'delivered', 'gave-up']),
    attempts: int,
    nextAt: int,
    leaseOwner: nullable(text(256)),
    leaseUntil: nullable(int),
    lastAttemptAt: nullable(int),
    lastError: nullable(text(65536)),
    finishedAt: nullable(int),
  },
  hook_marks: { subject: text(256), state: text(64), at: int },
  // The fleet's TUF repository (docs/design.md §21.2): a backup holds the online private keys, as
  // the database does. What clients verify is checked by them, not here.
  trust_metadata: { role: text(128, (s) => /^(root|targets|snapshot|timestamp|app\.[a-z0-9][a-z0-9_-]{0,62})$/.test(s), 'a TUF role name'), version: int, bytes: text(MAX_FIELD_CHARS), createdAt: int },
  trust_keys: { role: oneOf(['snapshot', 'timestamp', 'director']), privateKey: pem, publicKey: pem, createdAt: int },
  trust_pending_keys: { role: oneOf(['snapshot', 'timestamp', 'director']), privateKey: pem, publicKey: pem, createdAt: int },
  trust_pending: { role: oneOf(['root', 'targets']), bytes: text(MAX_FIELD_CHARS), updatedAt: int, updatedBy: nullable(text(256)) },
  signal_samples: {
    nodeId,
    app: appName,
    minute: int,
    at: int,
    version: nullable(version),
    since: int,
    restarts: int,
    livenessFailures: int,
    watchdogKills: int,
    oomKills: int,
    cpuMs: int,
    rssBytes: int,
    requests: nullable(int),
    errors: nullable(int),
    scrape: nullable(text(64)),
  },
  audit: {
    id: int,
    at: int,
    operator: nullable(text(256)),
    action: text(128),
    target: nullable(text(65536)),
    source: nullable(text(256)),
    details: json(objectSchema, 'a JSON object'),
  },
};

// The checks of a table's columns in the order a backup's table line names them; a table or
// column this steward-control does not know is refused with the reason.
export function rowChecks(table: string, columns: readonly string[]): Check[] | string {
  const known = COLUMNS[table];
  if (known === undefined) return `table ${table} is not one of the control plane's`;
  const checks: Check[] = [];
  for (const c of columns) {
    const check = known[c];
    if (check === undefined) return `column ${table}.${c} is not one of the control plane's`;
    checks.push(check);
  }
  return checks;
}

// Why row `row` fails its checks (naming the column), or null when it holds.
export function rowProblem(checks: readonly Check[], columns: readonly string[], row: readonly Scalar[]): string | null {
  for (let i = 0; i < checks.length; i++) {
    const why = (checks[i] as Check)(row[i] as Scalar);
    if (why !== null) return `column ${columns[i]} holds ${why}`;
  }
  return null;
}

function describe(v: Scalar): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return `text (${v.length} characters)`;
  return `${typeof v} ${String(v)}`;
}
