// The control plane's SQLite schema as numbered migrations. `PRAGMA user_version` is the number
// of the last one applied: a store made by a newer steward-control is refused, never guessed at
// (docs/design.md §10). Each migration is one small function run in the transaction that raises the
// version, so a crash leaves the store at one version or the next.
import type Database from 'better-sqlite3';

// Times are epoch milliseconds; booleans are 0/1; JSON columns hold JSON text.
const V1 = `
CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE tokens (
  hash TEXT PRIMARY KEY,            -- sha256 hex of the token; the token itself is never stored
  createdAt INTEGER NOT NULL,
  expiresAt INTEGER NOT NULL,
  usedAt INTEGER,
  usedBy TEXT
);
CREATE TABLE nodes (
  nodeId TEXT PRIMARY KEY,
  hostname TEXT NOT NULL,
  nodePublicKey TEXT NOT NULL,
  helperPublicKey TEXT NOT NULL,
  enrolledAt INTEGER NOT NULL,
  lastSeq INTEGER NOT NULL DEFAULT 0,
  lastHeartbeatAt INTEGER,
  apps TEXT NOT NULL DEFAULT '[]',
  bootId TEXT,
  agentVersion TEXT
);
CREATE TABLE receipts (
  nodeId TEXT NOT NULL,
  seq INTEGER NOT NULL,
  app TEXT NOT NULL,
  attemptId TEXT NOT NULL,
  outcome TEXT NOT NULL,
  reasonCode TEXT,
  fromVersion TEXT,
  targetVersion TEXT,
  updatedAt INTEGER NOT NULL,
  receivedAt INTEGER NOT NULL,
  counts INTEGER NOT NULL,
  envelope TEXT NOT NULL,
  PRIMARY KEY (nodeId, seq)
);
CREATE INDEX receipts_by_attempt ON receipts (attemptId);
CREATE TABLE releases (
  app TEXT NOT NULL,
  version TEXT NOT NULL,
  manifest TEXT NOT NULL,
  integrity TEXT NOT NULL,
  size INTEGER NOT NULL,
  expires INTEGER NOT NULL,
  artifactPath TEXT,
  addedAt INTEGER NOT NULL,
  PRIMARY KEY (app, version)
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  app TEXT NOT NULL,
  version TEXT NOT NULL,
  startedAt INTEGER NOT NULL,
  canary TEXT,
  batchSize INTEGER NOT NULL,
  verdictTimeoutMs INTEGER NOT NULL,
  allowRetryReverted INTEGER NOT NULL,
  heartbeatIntervalMs INTEGER NOT NULL,
  stopped INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL DEFAULT 'running',
  haltCode TEXT,
  haltNodeId TEXT,
  haltMessage TEXT,
  endedAt INTEGER
);
-- One running run per app, held by the database itself.
CREATE UNIQUE INDEX one_running_run_per_app ON runs (app) WHERE status = 'running';
CREATE TABLE run_nodes (
  runId INTEGER NOT NULL,
  nodeId TEXT NOT NULL,
  lastHeartbeatAt INTEGER,          -- as of the run's start
  PRIMARY KEY (runId, nodeId)
);
CREATE TABLE issued (
  runId INTEGER NOT NULL,
  nodeId TEXT NOT NULL,
  attemptId TEXT NOT NULL UNIQUE,
  issuedAt INTEGER NOT NULL
);
CREATE INDEX issued_by_node ON issued (nodeId);
`;

// Issue 17 (docs/design.md §11): labels, token ids and labels, the keys allowed per app, the rollout
// policy of a run, frozen targeting facts, and the attempt's window and batch.
const V2 = `
ALTER TABLE tokens ADD COLUMN id TEXT;
ALTER TABLE tokens ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
ALTER TABLE tokens ADD COLUMN revokedAt INTEGER;
UPDATE tokens SET id = substr(hash, 1, 16);
CREATE UNIQUE INDEX tokens_by_id ON tokens (id);
ALTER TABLE nodes ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
ALTER TABLE releases ADD COLUMN keyId TEXT NOT NULL DEFAULT '';
UPDATE releases SET keyId = json_extract(manifest, '$.keyId');
CREATE TABLE app_keys (
  app TEXT NOT NULL,
  keyId TEXT NOT NULL,
  addedAt INTEGER NOT NULL,
  PRIMARY KEY (app, keyId)
);
INSERT OR IGNORE INTO app_keys (app, keyId, addedAt) SELECT app, keyId, MIN(addedAt) FROM releases GROUP BY app, keyId;
ALTER TABLE runs ADD COLUMN selector TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN canaries INTEGER NOT NULL DEFAULT 1;
ALTER TABLE runs ADD COLUMN namedCanaries TEXT NOT NULL DEFAULT '[]';
ALTER TABLE runs ADD COLUMN canarySeed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN batch TEXT NOT NULL DEFAULT '1';
ALTER TABLE runs ADD COLUMN bakeMs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN maxFailures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN maxRefused TEXT NOT NULL DEFAULT '50%';
ALTER TABLE runs ADD COLUMN failuresCarried INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN windows TEXT NOT NULL DEFAULT '[]';
ALTER TABLE runs ADD COLUMN tz TEXT NOT NULL DEFAULT 'UTC';
ALTER TABLE runs ADD COLUMN startAt INTEGER;
ALTER TABLE runs ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN behind INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN retryOf INTEGER;
-- Runs made before: their batch size, their canary, no bake, and refusals never halted them.
UPDATE runs SET batch = CAST(batchSize AS TEXT), namedCanaries = CASE WHEN canary IS NULL THEN '[]' ELSE json_array(canary) END, maxRefused = '100%';
ALTER TABLE run_nodes ADD COLUMN listedApp INTEGER NOT NULL DEFAULT 1;
ALTER TABLE issued ADD COLUMN notAfter INTEGER;
-- Earlier attempts count as canaries: any revert halted those runs.
ALTER TABLE issued ADD COLUMN batch INTEGER NOT NULL DEFAULT 0;
-- One attempt per run and node, held by the database itself.
CREATE UNIQUE INDEX one_attempt_per_run_and_node ON issued (runId, nodeId);
CREATE INDEX issued_by_run ON issued (runId);
`;

// Issue 18 (docs/design.md §12): operators and their API tokens, dashboard sessions, failed
// authentications per source, and the audit log, all in the store so that any instance (§13)
// answers any request.
const V3 = `
CREATE TABLE operators (
  name TEXT PRIMARY KEY,
  role TEXT NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
  tokenHash TEXT NOT NULL UNIQUE,   -- sha256 hex of the API token; the token itself is never stored
  createdAt INTEGER NOT NULL,
  rotatedAt INTEGER
);
CREATE TABLE sessions (
  hash TEXT PRIMARY KEY,            -- sha256 hex of the cookie's secret
  operator TEXT NOT NULL REFERENCES operators (name) ON DELETE CASCADE,
  createdAt INTEGER NOT NULL,
  lastSeenAt INTEGER NOT NULL,
  expiresAt INTEGER NOT NULL
);
CREATE INDEX sessions_by_operator ON sessions (operator);
CREATE TABLE auth_failures (
  source TEXT PRIMARY KEY,
  failures INTEGER NOT NULL,
  lastAt INTEGER NOT NULL
);
CREATE INDEX auth_failures_by_time ON auth_failures (lastAt);
CREATE TABLE audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  operator TEXT,
  action TEXT NOT NULL,
  target TEXT,
  source TEXT,
  details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_by_time ON audit (at);
`;

// docs/design.md §12: each node's clock skew as its last accepted heartbeat showed it (sentAt minus the
// time the control plane received it), for the fleet page.
const V4 = `
ALTER TABLE nodes ADD COLUMN clockSkewMs INTEGER;
`;

// Issue 31: a node whose heartbeats are refused for clock skew (store/skew-refusal.ts): since
// when, when last recorded, and the skew then. All null while none is refused.
const V5 = `
ALTER TABLE nodes ADD COLUMN skewRefusedSince INTEGER;
ALTER TABLE nodes ADD COLUMN skewRefusedAt INTEGER;
ALTER TABLE nodes ADD COLUMN skewRefusedMs INTEGER;
`;

// Issue 33 (docs/design.md §18): signed downgrade authorizations, one per app and version.
const V6 = `
CREATE TABLE downgrades (
  app TEXT NOT NULL,
  version TEXT NOT NULL,
  keyId TEXT NOT NULL,
  notAfter INTEGER NOT NULL,
  envelope TEXT NOT NULL,            -- the envelope (steward-downgrade-v1) as the release key signed it
  addedAt INTEGER NOT NULL,
  PRIMARY KEY (app, version)
);
`;

// docs/design.md §18: a run's --max-fetch-failures. Runs from before it take the default, 20 %.
const V7 = `
ALTER TABLE runs ADD COLUMN maxFetchFailures TEXT NOT NULL DEFAULT '20%';
`;

// Issue 33 (docs/design.md §18): targets, who started each run (a target, its revert, the pins),
// and node pins.
const V8 = `
CREATE TABLE targets (
  name TEXT PRIMARY KEY,
  app TEXT NOT NULL,
  version TEXT NOT NULL,
  priority INTEGER NOT NULL,
  policy TEXT NOT NULL,             -- JSON: the run policy its runs get
  paused INTEGER NOT NULL DEFAULT 0,
  setAt INTEGER NOT NULL,
  setBy TEXT,
  clearedRunId INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE run_owners (
  runId INTEGER PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('target', 'revert', 'pin')),
  target TEXT
);
CREATE INDEX run_owners_by_target ON run_owners (target);
CREATE TABLE pins (
  nodeId TEXT NOT NULL,
  app TEXT NOT NULL,
  version TEXT NOT NULL,
  by TEXT,
  reason TEXT NOT NULL,
  at INTEGER NOT NULL,
  until INTEGER,
  runId INTEGER,                    -- the pin run that carried it, once one did
  PRIMARY KEY (nodeId, app)
);
`;

// docs/design.md §18: the runs of different targets of one app go side by side, over nodes no two
// of them have in flight at once (checked where runs start, src/control/rollouts/start-run.ts); a
// one-shot run still goes alone. The index that allowed one running run per app gives way to a
// plain one.
const V9 = `
DROP INDEX one_running_run_per_app;
CREATE INDEX running_runs_by_app ON runs (app) WHERE status = 'running';
`;


// Issue 34 (docs/design.md §19): each node's app signals, one sample a minute, kept for twice the
// longest analysis window (src/control/analysis/record-signals.ts). Integers only, as every other
// column (backups carry no REAL): CPU in milliseconds, scraped counters rounded.
const V10 = `
CREATE TABLE signal_samples (
  nodeId TEXT NOT NULL,
  app TEXT NOT NULL,
  minute INTEGER NOT NULL,          -- the minute it stands for (epoch ms); the first sample of it stays
  at INTEGER NOT NULL,
  version TEXT,
  since INTEGER NOT NULL,
  restarts INTEGER NOT NULL,
  livenessFailures INTEGER NOT NULL,
  watchdogKills INTEGER NOT NULL,
  oomKills INTEGER NOT NULL,
  cpuMs INTEGER NOT NULL,
  rssBytes INTEGER NOT NULL,
  requests INTEGER,
  errors INTEGER,
  scrape TEXT,
  PRIMARY KEY (nodeId, app, minute)
);
CREATE INDEX signal_samples_by_time ON signal_samples (at);
`;

// Issue 34 (docs/design.md §19): a run's and a target's analysis (JSON, docs/design.md §19; runs
// from before read off, targets the default), and each step's judgement, the first one recorded.
const V11 = `
ALTER TABLE runs ADD COLUMN analysis TEXT;
ALTER TABLE targets ADD COLUMN analysis TEXT;
CREATE TABLE run_judgements (
  runId INTEGER NOT NULL,
  step INTEGER NOT NULL,
  at INTEGER NOT NULL,
  mode TEXT NOT NULL,
  verdict TEXT NOT NULL,
  windowFrom INTEGER NOT NULL,
  windowTo INTEGER NOT NULL,
  judgement TEXT NOT NULL,          -- JSON: the analysis's judgement (judgement-record.ts)
  resumedAt INTEGER,
  resumedBy TEXT,
  PRIMARY KEY (runId, step)
);
`;

// Issue 34 (docs/design.md §19, "Telling people"): hooks, the durable queue of their deliveries (one
// row per event and hook, its body as sent on every attempt), and the last state seen of each
// subject whose transitions are events (a target's status).
const V12 = `
CREATE TABLE hooks (
  name TEXT PRIMARY KEY,
  url TEXT NOT NULL,
  events TEXT NOT NULL,             -- JSON: the event types it is sent
  secret TEXT NOT NULL,             -- the HMAC key of its signature; never shown back
  createdAt INTEGER NOT NULL,
  createdBy TEXT
);
CREATE TABLE hook_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  hook TEXT NOT NULL,
  eventId TEXT NOT NULL,
  type TEXT NOT NULL,
  body TEXT NOT NULL,               -- the CloudEvent as sent, byte for byte, on every attempt
  createdAt INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'gave-up')),
  attempts INTEGER NOT NULL DEFAULT 0,
  nextAt INTEGER NOT NULL,
  leaseOwner TEXT,
  leaseUntil INTEGER,
  lastAttemptAt INTEGER,
  lastError TEXT,
  finishedAt INTEGER,
  UNIQUE (hook, eventId)
);
CREATE INDEX hook_deliveries_due ON hook_deliveries (hook, state, nextAt);
CREATE TABLE hook_marks (
  subject TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  at INTEGER NOT NULL
);
`;

// Issue 35 (docs/design.md §20.2): beside each release's plain manifest, the same release's manifest
// signed with its file index, sent only to agents that read it (NULL: the release has none).
const V13 = `
ALTER TABLE releases ADD COLUMN indexedManifest TEXT;
`;

// Issue 36 (docs/design.md §21.2): the fleet's TUF repository. Every published version of each
// role's metadata as the exact bytes signed (append-only: one row per role and version, so two
// instances re-signing a timestamp at once make one row), the online keys (snapshot, timestamp,
// director), at most one pending root and one pending top-level targets with the signatures
// gathered so far, and each node's trust report from its latest v8 heartbeat.
const V14 = `
CREATE TABLE trust_metadata (
  role TEXT NOT NULL,               -- root, targets, snapshot, timestamp, app.<name>
  version INTEGER NOT NULL,
  bytes TEXT NOT NULL,              -- the metadata file as served (UTF-8 JSON), byte for byte
  createdAt INTEGER NOT NULL,
  PRIMARY KEY (role, version)
);
CREATE TABLE trust_keys (
  role TEXT PRIMARY KEY CHECK (role IN ('snapshot', 'timestamp', 'director')),
  privateKey TEXT NOT NULL,         -- Ed25519 PKCS#8 PEM: as secret as the database
  publicKey TEXT NOT NULL,          -- SPKI PEM
  createdAt INTEGER NOT NULL
);
CREATE TABLE trust_pending (
  role TEXT PRIMARY KEY CHECK (role IN ('root', 'targets')),
  bytes TEXT NOT NULL,              -- the metadata with the signatures gathered so far
  updatedAt INTEGER NOT NULL,
  updatedBy TEXT
);
ALTER TABLE nodes ADD COLUMN trust TEXT;       -- JSON: the heartbeat's trust report, or NULL
ALTER TABLE nodes ADD COLUMN trustAt INTEGER;  -- when it was reported
`;

// docs/design.md §21.4: the new online keys a rotation made (`trust rotate --new-online`), kept
// beside the ones in use until the root naming them is published, which puts them in trust_keys'
// place in its transaction (the old private keys deleted); dropped when no root will name them.
const V15 = `
CREATE TABLE trust_pending_keys (
  role TEXT PRIMARY KEY CHECK (role IN ('snapshot', 'timestamp', 'director')),
  privateKey TEXT NOT NULL,         -- Ed25519 PKCS#8 PEM: as secret as the database
  publicKey TEXT NOT NULL,          -- SPKI PEM
  createdAt INTEGER NOT NULL
);
`;

export const MIGRATIONS: ReadonlyArray<(db: Database.Database) => void> = [
  (db) => db.exec(V1), (db) => db.exec(V2), (db) => db.exec(V3), (db) => db.exec(V4), (db) => db.exec(V5), (db) => db.exec(V6), (db) => db.exec(V7), (db) => db.exec(V8),
  (db) => db.exec(V9), (db) => db.exec(V10), (db) => db.exec(V11), (db) => db.exec(V12), (db) => db.exec(V13), (db) => db.exec(V14),
  (db) => db.exec(V15),
];

export const STORE_SCHEMA_VERSION = MIGRATIONS.length;
