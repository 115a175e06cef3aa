// The control plane's SQLite schema. `PRAGMA user_version` is its version: a store made by a
// newer steward-control is refused, never guessed at (DESIGN §10).
export const STORE_SCHEMA_VERSION = 1;

// Times are epoch milliseconds; booleans are 0/1; JSON columns hold JSON text.
export const SCHEMA_V1 = `
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
