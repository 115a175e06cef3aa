// The control plane's store contract (docs/design.md §11). Every query the control plane makes goes
// through one of these async interfaces, so a second backend (PostgreSQL, §13) is one more
// implementation, not a redesign: sqlite/open-sqlite-store.ts and postgres/open-postgres-store.ts,
// opened by open-store.ts.
//
// The contract every implementation keeps:
// - Transactions never interleave. `write` runs its function in one serializable write
//   transaction, `read` over one consistent snapshot; a function may await the store's own
//   calls (and pure work) inside, and nothing else of this process sees its writes before it
//   returns. A throw undoes everything it wrote. On PostgreSQL a write that lost a conflict
//   with another process (a serialization failure, a deadlock) is run again from the start:
//   `fn` must have no effect outside the transaction that a second run would repeat wrongly.
// - Every uniqueness is the database's own constraint, not a check in code: one active run per
//   app, one attempt per run and node, one attemptId ever, one receipt per node and seq, one
//   token spend (`UPDATE ... WHERE usedAt IS NULL`). A caller may check first for a clear
//   message; the constraint still decides (a StewardError: BUSY for a second active run).
// - Time for decisions is the store's clock, `now()`, fixed for the whole transaction (as
//   PostgreSQL's now()): token expiry, the heartbeat's clock check, a run's plan.
import type { RunAnalysis } from '../../core/run-analysis.js';
import type { StoredJudgement } from './judgement-record.js';
import type { HeartbeatApp, HeartbeatPayload, TrustReport } from '../../core/heartbeat-schema.js';
import type { Labels } from '../../core/labels.js';
import type { ReceiptPayload } from '../../core/receipt-schema.js';
import type { Envelope } from '../../core/release-schemas.js';

// What savepoint() throws when the failure inside it ended the whole transaction (SQLite rolls
// back everything after some I/O errors): nothing of that transaction can commit any more.
export class TransactionAbortedError extends Error {
  constructor(readonly original: unknown) {
    super(`the store's transaction was rolled back whole: ${(original as Error)?.message ?? String(original)}`, { cause: original });
    this.name = 'TransactionAbortedError';
  }
}

export interface ControlStore {
  // The database, for messages (a file name, or a URL without its password).
  readonly location: string;
  write<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  read<T>(fn: (tx: StoreReader) => Promise<T>): Promise<T>;
  // Resolves once every commit made before the call is durable (on disk); rejects when that
  // could not be made sure of. Every answer that rests on a write waits for it.
  durable(): Promise<void>;
  // Calls `listener` after each commit of a transaction that called tx.wakeRollouts(): at once
  // for this process's own commits, and (PostgreSQL: LISTEN/NOTIFY on a connection of its own)
  // for those of every other instance on the database; SQLite has one serving instance. A wake
  // from elsewhere may be lost (a dropped connection): the ticker's timer stands behind it.
  // Returns the way to stop listening.
  onRolloutWake(listener: () => void): () => void;
  // Calls `listener` with the nodeIds of each commit of a transaction that called tx.wakeNodes(),
  // delivered as onRolloutWake's are: at once for this process's commits, through LISTEN/NOTIFY
  // for other instances' (PostgreSQL). Its ids are each `n-<hex>`, deduplicated per commit (a
  // large set may come in several calls). A wake from elsewhere may be lost (a dropped
  // connection): the node's next heartbeat stands behind it. Returns the way to stop listening.
  onNodeWake(listener: (nodeIds: readonly string[]) => void): () => void;
  // Closes the store after the last transaction. Idempotent.
  close(): Promise<void>;
}

export interface StoreReader {
  // The store's clock (epoch ms), the same value for the whole transaction.
  now(): Promise<number>;
  nodes: NodeReads;
  receipts: ReceiptReads;
  runs: RunReads;
  releases: ReleaseReads;
  tokens: TokenReads;
  settings: SettingReads;
  operators: OperatorReads;
  sessions: SessionReads;
  authFailures: AuthFailureReads;
  audit: AuditReads;
  targets: TargetReads;
  pins: PinReads;
  hooks: HookReads;
  signals: SignalReads;
  trust: TrustReads;
}

export interface StoreTx extends StoreReader {
  nodes: NodeReads & NodeWrites;
  receipts: ReceiptReads & ReceiptWrites;
  runs: RunReads & RunWrites;
  releases: ReleaseReads & ReleaseWrites;
  tokens: TokenReads & TokenWrites;
  settings: SettingReads & SettingWrites;
  operators: OperatorReads & OperatorWrites;
  sessions: SessionReads & SessionWrites;
  authFailures: AuthFailureReads & AuthFailureWrites;
  audit: AuditReads & AuditWrites;
  targets: TargetReads & TargetWrites;
  pins: PinReads & PinWrites;
  hooks: HookReads & HookWrites;
  signals: SignalReads & SignalWrites;
  trust: TrustReads & TrustWrites;
  // Runs `fn` so that a throw undoes only what `fn` wrote (a savepoint); the rest of the
  // transaction goes on.
  savepoint<T>(fn: () => Promise<T>): Promise<T>;
  // Wakes every instance's rollout ticker once this transaction commits (onRolloutWake);
  // nothing when it rolls back. Idempotent within a transaction; call it outside a savepoint
  // that may roll back (PostgreSQL would drop the NOTIFY with it, and a second call sends none).
  wakeRollouts(): Promise<void>;
  // Tells every instance, once this transaction commits, that these nodes' desired sets changed
  // (onNodeWake; docs/design.md §18, wake-ups); nothing when it rolls back. A node named twice in
  // one transaction is told once. The same care about savepoints as wakeRollouts. Callers go
  // through rollouts/desired-changed.ts.
  wakeNodes(nodeIds: readonly string[]): Promise<void>;
}

// ---- nodes

export interface NodeRow {
  nodeId: string;
  hostname: string;
  nodePublicKey: string;
  helperPublicKey: string;
  enrolledAt: number;
  lastSeq: number;
  lastHeartbeatAt: number | null;
  apps: HeartbeatApp[];
  bootId: string | null;
  agentVersion: string | null;
  // The operator's labels, and what the node claimed at enrollment under `claimed.<key>`.
  labels: Labels;
  // The node's clock minus the control plane's, as its last accepted heartbeat showed it (its
  // sentAt against the time it was received); null before one (docs/design.md §12).
  clockSkewMs: number | null;
  // Its heartbeats refused for clock skew since its last accepted one, or null.
  clockSkewRefused: ClockSkewRefusal | null;
  // What its latest heartbeat reported of its trust in releases (v8, docs/design.md §21.2), and
  // when; null when that heartbeat carried none (an older agent).
  trust: NodeTrust | null;
}

export interface NodeTrust extends TrustReport {
  at: number;
}

// A node whose heartbeats the control plane refuses for clock skew (422 CLOCK_SKEW): each such
// heartbeat carried a valid signature of the node and a seq above its last accepted one, so it
// is the node's own word, only not fresh. Written at most once per minimum gap a node, so a node
// that sends many costs one row update a gap; an accepted heartbeat clears it.
export interface ClockSkewRefusal {
  // The first refused heartbeat since the last accepted one (or the record cleared).
  since: number;
  // When it was last recorded (at most a gap behind the latest refused heartbeat).
  lastAt: number;
  // That heartbeat's sentAt minus the time it was received.
  clockSkewMs: number;
}

export interface NewNode {
  nodeId: string;
  hostname: string;
  nodePublicKey: string;
  helperPublicKey: string;
  enrolledAt: number;
  labels: Labels;
}

// What a heartbeat's checks need of its node.
export interface NodeAuth {
  nodeId: string;
  nodePublicKey: string;
  helperPublicKey: string;
  lastSeq: number;
}

export interface NodeReads {
  get(nodeId: string): Promise<NodeRow | null>;
  auth(nodeId: string): Promise<NodeAuth | null>;
  // The node's public key PEM, or null: all a heartbeat's signature check needs.
  key(nodeId: string): Promise<string | null>;
  // Every enrolled node, by nodeId.
  list(): Promise<NodeRow[]>;
  // Up to `limit` enrolled nodes with a nodeId above `afterNodeId` (null: from the first), by nodeId.
  page(afterNodeId: string | null, limit: number): Promise<NodeRow[]>;
  // How many nodes heartbeated at or after `since`, before it, or never (the metrics' gauge).
  countByFreshness(since: number): Promise<FreshnessCounts>;
  // How many nodes the control plane refuses heartbeats of for clock skew now (clockSkewRefused).
  countClockSkewRefused(): Promise<number>;
  // How many nodes' latest trust report (v8) says `tuf` with no timestamp age or one above
  // `maxAgeSeconds` (docs/design.md §21.2: metadata-stale while the fleet has a repository).
  countMetadataStale(maxAgeSeconds: number): Promise<number>;
  // How many nodes report each app at each version (`current`, null: not installed), from their
  // latest heartbeat; one row per app and version reported, in no order. Values are as stored:
  // the caller checks them before they become label values.
  countByAppVersion(): Promise<AppVersionCount[]>;
}

export interface FreshnessCounts {
  fresh: number;
  stale: number;
  never: number;
}

export interface AppVersionCount {
  app: string;
  version: string | null;
  nodes: number;
}

export interface NodeWrites {
  insert(n: NewNode): Promise<void>;
  // Records an accepted heartbeat: its seq, the time and the report; clears a clock skew refusal.
  recordHeartbeat(hb: HeartbeatPayload, at: number): Promise<void>;
  // Records that a heartbeat of the node, signed and with a fresh seq, was refused at `at` for a
  // skew of `skewMs`: starts the refusal (`since` = `at`) when none is on record after the node's
  // last accepted heartbeat, else updates its skew and lastAt, but only when the last record is
  // `minGapMs` old or more. Whether it wrote; false for a node not enrolled.
  recordClockSkewRefusal(nodeId: string, skewMs: number, at: number, minGapMs: number): Promise<boolean>;
  // Replaces a node's labels; false when it is not enrolled.
  setLabels(nodeId: string, labels: Labels): Promise<boolean>;
  // Forgets a node (it leaves every run; its receipts stay). False when it was not enrolled.
  remove(nodeId: string): Promise<boolean>;
}

// ---- receipts

export interface ReceiptRow {
  nodeId: string;
  seq: number;
  app: string;
  attemptId: string;
  outcome: ReceiptPayload['outcome'];
  reasonCode: string | null;
  fromVersion: string | null;
  targetVersion: string | null;
  updatedAt: number;
  receivedAt: number;
  counts: boolean;
  envelope: Envelope;
}

// A receipt's facts without its envelope (what the planner reads, for every node of a run).
export type ReceiptFact = Omit<ReceiptRow, 'envelope'>;

export interface ReceiptFilter {
  nodeId?: string;
  app?: string;
}

// Where a receipt stands in arrival order.
export interface ReceiptKey {
  receivedAt: number;
  nodeId: string;
  seq: number;
}

export interface ReceiptReads {
  // The envelope stored under a node's receipt seq, or null.
  envelope(nodeId: string, seq: number): Promise<Envelope | null>;
  // Stored receipts in arrival order, optionally of one node and/or one app.
  list(filter?: ReceiptFilter): Promise<ReceiptRow[]>;
  // Up to `limit` of them after the receipt `after` names (null: from the first), in arrival
  // order (receivedAt, nodeId, seq).
  page(filter: ReceiptFilter, after: ReceiptKey | null, limit: number): Promise<ReceiptRow[]>;
  // The counting receipts that answer an attempt of run `runId`.
  countingForRun(runId: number): Promise<ReceiptFact[]>;
  // The `rolled-back` and `failed` receipts of `app` from the nodes of run `runId`, of any run
  // or none: the versions each reverted before, and its reverts during a bake.
  revertsForRun(runId: number, app: string): Promise<ReceiptFact[]>;
  // The same for every node (a dry run has no run to join).
  revertsOfApp(app: string): Promise<ReceiptFact[]>;
  // Missing seqs between a node's lowest and highest stored receipt seq (at most 1000).
  gaps(nodeId: string): Promise<number[]>;
}

export interface ReceiptWrites {
  insert(nodeId: string, r: { envelope: Envelope; payload: ReceiptPayload; counts: boolean }, receivedAt: number): Promise<void>;
}

// ---- runs

// How a run was asked for (docs/design.md §11), as recorded at its start.
export interface RunPolicy {
  selector: string;
  canaries: number;
  namedCanaries: string[];
  canarySeed: number;
  // "5" or "10%".
  batch: string;
  bakeMs: number;
  maxFailures: number;
  // "3" or "50%".
  maxRefused: string;
  // "2" or "20%" of a batch (docs/design.md §18).
  maxFetchFailures: string;
  // Failures spent by the run this one retries.
  failuresCarried: number;
  verdictTimeoutMs: number;
  allowRetryReverted: boolean;
  // The --window specs as given, and their zone.
  windows: string[];
  tz: string;
  startAt: number | null;
  // Started by `retry --behind`.
  behind: boolean;
  retryOf: number | null;
  // --analysis, --analysis-window, --analysis-threshold (docs/design.md §19); runs from before
  // schema 11 read `off`.
  analysis: RunAnalysis;
}

export type StoredRunStatus = 'running' | 'succeeded' | 'halted' | 'stopped';

export interface RunRow extends RunPolicy {
  id: number;
  app: string;
  version: string;
  startedAt: number;
  heartbeatIntervalMs: number;
  // Operator requests: stop ends the run at its next advance; pause issues nothing new.
  stopped: boolean;
  paused: boolean;
  // 'running' until the run ends (whatever the planner shows meanwhile: scheduled, waiting, paused).
  status: StoredRunStatus;
  haltCode: string | null;
  haltNodeId: string | null;
  haltMessage: string | null;
  endedAt: number | null;
}

export type NewRun = Omit<RunRow, 'id' | 'stopped' | 'paused' | 'status' | 'haltCode' | 'haltNodeId' | 'haltMessage' | 'endedAt'>;

// A node of a run as frozen at its start, with what it reports now.
export interface RunNodeRow {
  nodeId: string;
  // Its last heartbeat when the run started, and whether that heartbeat listed the app.
  lastHeartbeatAt: number | null;
  listedApp: boolean;
  // Its latest report of the run's app, or null when it does not report it now.
  app: HeartbeatApp | null;
  // Now: since when its heartbeats are refused for clock skew (NodeRow.clockSkewRefused), or null.
  clockSkewRefusedSince: number | null;
}

export interface IssuedRow {
  nodeId: string;
  attemptId: string;
  issuedAt: number;
  // The end of the window it was issued in; null for a run without windows.
  notAfter: number | null;
  // 0 for the canaries, then 1, 2, ... in order.
  batch: number;
}

export interface AttemptRow {
  attemptId: string;
  nodeId: string;
  app: string;
  version: string;
  runId: number;
}

export interface OpenAttempt {
  app: string;
  version: string;
  attemptId: string;
  notAfter: number | null;
  // The run's bake: the watch window the node is asked for (docs/design.md §17).
  bakeMs: number;
  // When it was issued, and the run's verdict timeout: the node's fetch deadline (desired.ts).
  issuedAt: number;
  verdictTimeoutMs: number;
}

// A judgement of one step of a run (docs/design.md §19), the first one recorded for it: the
// verdict, the window, the judgement as the analysis made it (checked when read), and whether an
// operator resumed the run after it.
export interface JudgementRow {
  runId: number;
  // 0: the canaries; then each batch.
  step: number;
  at: number;
  // The run's mode when it was judged: observe records, enforce decides.
  mode: 'observe' | 'enforce';
  verdict: 'pass' | 'fail' | 'inconclusive';
  from: number;
  to: number;
  judgement: StoredJudgement;
  resumedAt: number | null;
  resumedBy: string | null;
}

export interface RunReads {
  get(id: number): Promise<RunRow | null>;
  // The judgements of a run's steps, by step.
  judgements(runId: number): Promise<JudgementRow[]>;
  // The newest run of `app` that has not ended, or null. Runs of different targets of one app may
  // go side by side (docs/design.md §18); a one-shot run goes alone.
  active(app: string): Promise<RunRow | null>;
  // Every run of `app` that has not ended, newest first.
  runningOf(app: string): Promise<RunRow[]>;
  // Every run that has not ended, by id; whether there is one (cheap: most heartbeats of a
  // fleet arrive while no rollout runs).
  activeAll(): Promise<RunRow[]>;
  anyActive(): Promise<boolean>;
  // The latest run of an app (any status), or null; of every app.
  latest(app: string): Promise<RunRow | null>;
  latestAll(): Promise<RunRow[]>;
  // The latest run of an app that ended `succeeded`, or null.
  lastSucceeded(app: string): Promise<RunRow | null>;
  // Runs newest first (by id), of one app or of every app (null), with an id below `beforeId`
  // (null: from the newest); at most `limit`.
  page(app: string | null, beforeId: number | null, limit: number): Promise<RunRow[]>;
  // The run's nodes still enrolled (a removed node leaves the run), by nodeId.
  nodes(runId: number): Promise<RunNodeRow[]>;
  // The attempts a run issued, by issuedAt then nodeId.
  issued(runId: number): Promise<IssuedRow[]>;
  // The attempt an attemptId names, of any run, or null.
  attempt(attemptId: string): Promise<AttemptRow | null>;
  // Attempts issued to a node by runs that have not ended and are not stopped, that no counting
  // receipt answered yet, and whose notAfter is after `now`.
  openAttemptsFor(nodeId: string, now: number): Promise<OpenAttempt[]>;
  // How many runs have each stored status; a status no run has is absent.
  countByStatus(): Promise<Array<{ status: StoredRunStatus; runs: number }>>;
}

export interface RunWrites {
  // Inserts a run that has not ended, with its frozen nodes; BUSY when the app has one already.
  insert(run: NewRun, nodes: Array<{ nodeId: string; lastHeartbeatAt: number | null; listedApp: boolean }>): Promise<number>;
  // Records an attempt before it is sent, unless the run issued the node one already (another
  // instance, or a restarted one, advanced the same step): false then, and nothing written.
  // The constraint one_attempt_per_run_and_node decides, not a read before.
  insertIssued(runId: number, i: IssuedRow): Promise<boolean>;
  // The run's advance lock (docs/design.md §13), held until the transaction ends. Only its holder may
  // issue or end the run. tryLock takes it when no other transaction holds it and answers
  // whether it did; lock waits for it. SQLite: true at once (its write transaction excludes
  // every other writer already).
  tryLock(runId: number): Promise<boolean>;
  lock(runId: number): Promise<void>;
  // Records a run's end once: a run that already ended keeps its first status.
  end(runId: number, status: Exclude<StoredRunStatus, 'running'>, halt: { code: string; nodeId?: string; message: string } | undefined, at: number): Promise<void>;
  setStopped(runId: number): Promise<void>;
  setPaused(runId: number, paused: boolean): Promise<void>;
  // Records a step's judgement unless one is recorded already (another instance judged it
  // first): false then, and nothing written. Idempotent per (runId, step).
  insertJudgement(j: Omit<JudgementRow, 'resumedAt' | 'resumedBy'>): Promise<boolean>;
  // Marks the run's inconclusive judgements that no resume answered yet as resumed (`rollout
  // resume`, `target resume`): the next step may go. Answers how many.
  resumeJudgements(runId: number, at: number, by: string | null): Promise<number>;
  // Adds nodes to a running run of a target, or records a member's facts again (a node that
  // matched later, came back online or reported the app since): its last heartbeat and whether
  // it lists the app, now (docs/design.md §18). Attempts already issued are untouched.
  refreezeNodes(runId: number, nodes: Array<{ nodeId: string; lastHeartbeatAt: number | null; listedApp: boolean }>): Promise<void>;
}

// ---- releases and their keys

export interface ReleaseRow {
  app: string;
  version: string;
  manifest: Envelope;
  integrity: string;
  size: number;
  expires: number;
  artifactPath: string | null;
  addedAt: number;
  keyId: string;
  // The same release's manifest signed with its file index (docs/design.md §20.2), or null (none
  // made: --url, --no-index, a release from before). Absent on write reads as null.
  indexedManifest?: Envelope | null;
}

export interface AppKeyRow {
  app: string;
  keyId: string;
  addedAt: number;
}

// A signed downgrade authorization (docs/design.md §18), one per app and version: the last one made.
// `authorization` is the envelope as the release key signed it; `keyId` and `notAfter` are its
// key's and payload's, for listing. Read back as data: a reader checks the envelope's shape before
// it sends it anywhere, and the host checks its signature.
export interface DowngradeRow {
  app: string;
  version: string;
  keyId: string;
  notAfter: number;
  authorization: Envelope;
  addedAt: number;
}

export interface ReleaseReads {
  get(app: string, version: string): Promise<ReleaseRow | null>;
  // The catalog, by app then time added.
  list(app?: string): Promise<ReleaseRow[]>;
  // The key ids allowed to sign an app's manifests (every app when none is named).
  keys(app?: string): Promise<AppKeyRow[]>;
  // The downgrade authorization for app@version, or null.
  downgrade(app: string, version: string): Promise<DowngradeRow | null>;
  // Every downgrade authorization (of one app when named), by app, then time made.
  downgrades(app?: string): Promise<DowngradeRow[]>;
}

export interface ReleaseWrites {
  // Inserts a release, or replaces the manifest (and expiry, key, artifact, and the indexed
  // manifest, null when absent) of an existing one.
  upsert(r: ReleaseRow): Promise<void>;
  // Removes a release from the catalog; false when it was not there.
  remove(app: string, version: string): Promise<boolean>;
  // Allows a key id to sign an app's manifests (idempotent).
  allowKey(app: string, keyId: string, at: number): Promise<void>;
  // Stores the downgrade authorization for app@version, replacing the one there was.
  putDowngrade(r: DowngradeRow): Promise<void>;
}

// ---- enrollment tokens

export interface TokenRow {
  id: string;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
  usedBy: string | null;
  revokedAt: number | null;
  labels: Labels;
}

export interface TokenReads {
  list(): Promise<TokenRow[]>;
}

export interface TokenWrites {
  // Stores a token by its hash (the token itself is never stored).
  insert(hash: string, t: Omit<TokenRow, 'usedAt' | 'usedBy' | 'revokedAt'>): Promise<void>;
  // Spends the token of `hash` for `nodeId` when it is unused, unrevoked and unexpired at `at`;
  // returns its labels, or null (nothing changed).
  spend(hash: string, at: number, nodeId: string): Promise<Labels | null>;
  // Revokes an unused token; the row as it is afterwards, or null when there is no such token.
  revoke(id: string, at: number): Promise<TokenRow | null>;
}

// ---- settings

export interface SettingReads {
  get(key: string): Promise<string | null>;
}

export interface SettingWrites {
  set(key: string, value: string): Promise<void>;
}

// ---- operators, their sessions, failed authentications, the audit log (docs/design.md §12)

export type OperatorRole = 'viewer' | 'operator' | 'admin';

export interface OperatorRow {
  name: string;
  role: OperatorRole;
  // sha256 hex of the operator's API token; the token itself is never stored.
  tokenHash: string;
  createdAt: number;
  rotatedAt: number | null;
}

export interface OperatorReads {
  // Every operator, by name (few: the token check compares against each, in constant time).
  list(): Promise<OperatorRow[]>;
  get(name: string): Promise<OperatorRow | null>;
}

export interface OperatorWrites {
  // Adds an operator; the name is a database constraint (OPERATOR_EXISTS for a second one).
  insert(o: OperatorRow): Promise<void>;
  // Replaces an operator's token hash; false when there is no such operator.
  setToken(name: string, tokenHash: string, at: number): Promise<boolean>;
  // Removes an operator and every session of theirs; false when there was none.
  remove(name: string): Promise<boolean>;
}

export interface SessionRow {
  // sha256 hex of the session cookie's secret; the secret itself is never stored.
  hash: string;
  operator: string;
  createdAt: number;
  lastSeenAt: number;
  // The absolute end of the session, whatever its use.
  expiresAt: number;
}

export interface SessionReads {
  get(hash: string): Promise<SessionRow | null>;
  // How many sessions an operator has that have not expired at `now` by `idleMs`.
  countFor(operator: string, now: number, idleMs: number): Promise<number>;
}

export interface SessionWrites {
  insert(s: SessionRow): Promise<void>;
  // Records a use of the session at `at` (its idle time starts again).
  touch(hash: string, at: number): Promise<void>;
  // Ends one session; false when there was none.
  remove(hash: string): Promise<boolean>;
  // Ends every session of an operator (operator remove and rotate); how many it ended.
  removeFor(operator: string): Promise<number>;
  // Forgets sessions expired at `now` (absolutely, or idle for `idleMs`).
  removeExpired(now: number, idleMs: number): Promise<void>;
}

export interface AuthFailureRow {
  // Where the failures came from (a peer address, an IPv6 /64).
  source: string;
  failures: number;
  lastAt: number;
}

export interface AuthFailureReads {
  // The recent failures of a source: none when its last one is at or before `since`.
  get(source: string, since: number): Promise<AuthFailureRow | null>;
}

export interface AuthFailureWrites {
  // Counts one more failure of `source` at `at`, starting again from 1 when its last one is at
  // or before `since`, and forgets the sources whose last failure is that old; the new count.
  record(source: string, at: number, since: number): Promise<number>;
}

export interface AuditEntry {
  at: number;
  // Who: an operator's name, `local:<user>` for the local CLI, null for a credential that named nobody.
  operator: string | null;
  // What: `rollout.start`, `operator.add`, `session.login`, `auth.failed`, `denied`, ...
  action: string;
  // On what: `web@1.4.0`, a node id, an operator's name; null when nothing in particular.
  target: string | null;
  // The peer the request came from (after --trusted-proxy), null for the local CLI.
  source: string | null;
  // The change's parameters; never a secret.
  details: Record<string, unknown>;
}

export interface AuditRow extends AuditEntry {
  // Increasing in the order entries were recorded.
  id: number;
}

export interface AuditReads {
  // Up to `limit` entries recorded at or after `since`, with ids above `afterId`, oldest first.
  page(since: number, afterId: number, limit: number): Promise<AuditRow[]>;
}

export interface AuditWrites {
  insert(e: AuditEntry): Promise<void>;
}

// ---- targets and node pins (docs/design.md §18)

// A target's run policy: what `rollout start` takes, recorded once and given to each run it starts.
export interface TargetPolicy {
  selector: string;
  canaries: number;
  namedCanaries: string[];
  batch: string;
  bakeMs: number;
  maxFailures: number;
  maxRefused: string;
  maxFetchFailures: string;
  verdictTimeoutMs: number;
  allowRetryReverted: boolean;
  windows: string[];
  tz: string;
  startAt: number | null;
  // Stored in its own column (schema 11), not in the policy JSON that older instances read
  // strictly; a target set before reads the default (observe).
  analysis: RunAnalysis;
}

export interface TargetRow {
  name: string;
  app: string;
  version: string;
  priority: number;
  policy: TargetPolicy;
  paused: boolean;
  // When and by whom the version was last set.
  setAt: number;
  setBy: string | null;
  // A halted or stopped run of the target with an id up to this one no longer holds it back
  // (`target resume`, or a new version); 0: none cleared.
  clearedRunId: number;
}

// Who started a run: a target converging (`target`), a target's revert, or the node pins of an app.
export type RunOwnerKind = 'target' | 'revert' | 'pin';

export interface RunOwner {
  runId: number;
  kind: RunOwnerKind;
  // The target's name; null for a pin run.
  target: string | null;
}

export interface TargetReads {
  // Every target, by name.
  list(): Promise<TargetRow[]>;
  get(name: string): Promise<TargetRow | null>;
  // The runs a target started (converging and reverting), newest first.
  runs(name: string): Promise<RunOwner[]>;
  // Who started a run, or null (a one-shot `rollout start`).
  ownerOf(runId: number): Promise<RunOwner | null>;
}

export interface TargetWrites {
  // Inserts a target or replaces it whole.
  put(t: TargetRow): Promise<void>;
  // Forgets a target (its runs stay, and still name it); false when there was none.
  remove(name: string): Promise<boolean>;
  // Records who started a run; once per run.
  linkRun(owner: RunOwner): Promise<void>;
}

// A node pin: the node runs `version` of `app` whatever a target wants (docs/design.md §18).
export interface PinRow {
  nodeId: string;
  app: string;
  version: string;
  by: string | null;
  reason: string;
  at: number;
  // When it lifts itself, or null.
  until: number | null;
  // The pin run that carried it to the node, once one did (one run per pin: a node that
  // fails its pinned version is not asked again until the pin is set again).
  runId: number | null;
}

export interface PinReads {
  // Every pin, by nodeId then app.
  list(): Promise<PinRow[]>;
  get(nodeId: string, app: string): Promise<PinRow | null>;
}

export interface PinWrites {
  // Inserts a pin or replaces the node's pin of the app.
  put(p: PinRow): Promise<void>;
  // Records the run that carries a pin.
  setRun(nodeId: string, app: string, runId: number): Promise<void>;
  // Lifts a pin: the row it removed, or null when there was none.
  remove(nodeId: string, app: string): Promise<PinRow | null>;
}

// ---- hooks: who is told of run and target events, and the durable queue of what they are told
// (docs/design.md §19, "Telling people")

export interface HookRow {
  name: string;
  // https://..., or http:// to a loopback host (hooks/hook-url.ts).
  url: string;
  // The event types it is sent (hooks/hook-events.ts), in the order given.
  events: string[];
  // The HMAC-SHA256 key of its signature header. Never shown back by a read the operator sees.
  secret: string;
  createdAt: number;
  createdBy: string | null;
}

export type DeliveryState = 'pending' | 'delivered' | 'gave-up';

// One event to one hook: the exact body sent on every attempt (its CloudEvent id is the
// idempotency id), and where its delivery stands.
export interface DeliveryRow {
  id: number;
  hook: string;
  eventId: string;
  type: string;
  body: string;
  createdAt: number;
  state: DeliveryState;
  attempts: number;
  // When it may be tried again (pending).
  nextAt: number;
  // The instance holding it and until when: another instance takes it over only after that.
  leaseOwner: string | null;
  leaseUntil: number | null;
  lastAttemptAt: number | null;
  // The last failed attempt's reason (a reason code, then a sentence), or null.
  lastError: string | null;
  // When it was delivered or given up.
  finishedAt: number | null;
}

export interface HookStats {
  hook: string;
  pending: number;
  delivered: number;
  gaveUp: number;
  lastAttemptAt: number | null;
  lastError: string | null;
}

export interface HookReads {
  // Every hook, by name.
  list(): Promise<HookRow[]>;
  get(name: string): Promise<HookRow | null>;
  // Per hook that has deliveries: how many are pending, delivered, given up, and its latest failure.
  stats(): Promise<HookStats[]>;
  // Deliveries of a hook (every hook: null), newest first, at most `limit` (tests, status).
  deliveries(hook: string | null, limit: number): Promise<DeliveryRow[]>;
  // The hooks with a pending delivery due at `now` whose lease is free or has run out, by name:
  // what a claim would find (read first, so that an idle queue costs no write).
  dueHooks(now: number): Promise<string[]>;
  // The state last recorded for a subject of transition events (`target/web`), or null.
  mark(subject: string): Promise<string | null>;
}

export interface HookWrites {
  // Adds a hook; the name is a database constraint (HOOK_EXISTS for a second one).
  insert(h: HookRow): Promise<void>;
  // Removes a hook and every delivery of it; false when there was none.
  remove(name: string): Promise<boolean>;
  // Queues one event for one hook, due at once. A second enqueue of the same hook and eventId
  // writes nothing.
  enqueue(d: { hook: string; eventId: string; type: string; body: string; at: number }): Promise<void>;
  // Takes up to `limit` pending deliveries of `hook` due at `now` whose lease is free or has run
  // out (a killed instance's), oldest due first, leased to `owner` until `leaseUntil`. What it
  // returns no other instance takes before then.
  claim(hook: string, owner: string, now: number, leaseUntil: number, limit: number): Promise<DeliveryRow[]>;
  // Records an attempt that the receiver acknowledged (2xx). Idempotent.
  delivered(id: number, at: number): Promise<void>;
  // Records a failed attempt and when to try again, releasing the lease; false (nothing written)
  // when the delivery is no longer pending or `owner` no longer holds it.
  retry(id: number, owner: string, at: number, nextAt: number, error: string): Promise<boolean>;
  // Records a failed attempt after which the delivery is given up; false as retry's.
  giveUp(id: number, owner: string, at: number, error: string): Promise<boolean>;
  // Records a subject's state for transition events.
  setMark(subject: string, state: string, at: number): Promise<void>;
  // Forgets delivered and given-up deliveries finished before `before`; how many.
  prune(before: number): Promise<number>;
}

// ---- signal samples (docs/design.md §19): one sample of an app's signals per node, app and minute

export interface SignalSample {
  nodeId: string;
  app: string;
  // The minute it stands for (epoch ms, a multiple of 60,000), and when it was taken.
  minute: number;
  at: number;
  // The version the node ran then (null: none installed).
  version: string | null;
  // The wire's `signals` (src/control/analysis/signals-shape.ts): `since` as epoch ms; counters
  // stored as integers (rounded; CPU to the millisecond).
  since: number;
  restarts: number;
  livenessFailures: number;
  watchdogKills: number;
  oomKills: number;
  cpuSeconds: number;
  rssBytes: number;
  requests: number | null;
  errors: number | null;
  // The last scrape: null when the app's manifest names no metrics, 'ok', or its reason code.
  scrape: string | null;
}

export interface SignalReads {
  // The samples of `app` from these nodes taken at or after `from` and before `to`, by nodeId then at.
  window(app: string, nodeIds: readonly string[], from: number, to: number): Promise<SignalSample[]>;
}

export interface SignalWrites {
  // Stores each sample unless its node, app and minute has one already (the first of a minute stays).
  record(samples: readonly SignalSample[]): Promise<void>;
  // Forgets samples taken before `before`; how many.
  prune(before: number): Promise<number>;
}

// ---- the fleet's TUF repository (docs/design.md §21.2)

// One published version of a role's metadata, as the exact bytes served.
export interface TrustMetadataRow {
  // root, targets, snapshot, timestamp, app.<name>
  role: string;
  version: number;
  bytes: string;
  createdAt: number;
}

export type OnlineRole = 'snapshot' | 'timestamp' | 'director';

export interface TrustKeyRow {
  role: OnlineRole;
  // PKCS#8 and SPKI PEM of an Ed25519 key.
  privateKey: string;
  publicKey: string;
  createdAt: number;
}

export type PendingRole = 'root' | 'targets';

export interface TrustPendingRow {
  role: PendingRole;
  // The metadata with the signatures gathered so far.
  bytes: string;
  updatedAt: number;
  updatedBy: string | null;
}

export interface TrustReads {
  // The newest version of a role, or null.
  latest(role: string): Promise<TrustMetadataRow | null>;
  get(role: string, version: number): Promise<TrustMetadataRow | null>;
  // Every version of a role above `after`, oldest first.
  after(role: string, after: number): Promise<TrustMetadataRow[]>;
  // The newest version of each role whose name starts with `prefix` (`app.`), by role.
  latestOf(prefix: string): Promise<TrustMetadataRow[]>;
  keys(): Promise<TrustKeyRow[]>;
  // The new online keys a rotation made (`trust rotate --new-online`), not yet in use: what a
  // pending root names until it is published (docs/design.md §21.4).
  pendingKeys(): Promise<TrustKeyRow[]>;
  pending(role: PendingRole): Promise<TrustPendingRow | null>;
}

export interface TrustWrites {
  // Inserts one version; false (nothing written, the transaction goes on) when that role and
  // version is published already: metadata is append-only and the first insert wins.
  publish(row: TrustMetadataRow): Promise<boolean>;
  // Inserts the online keys; false when any is there already (they are made once).
  insertKeys(rows: readonly TrustKeyRow[]): Promise<boolean>;
  // Inserts new pending online keys; false when a role has one already.
  insertPendingKeys(rows: readonly TrustKeyRow[]): Promise<boolean>;
  // Drops the pending keys of these roles (a rotation abandoned): their private keys are deleted.
  dropPendingKeys(roles: readonly OnlineRole[]): Promise<void>;
  // Puts the pending key of `role` whose public key is `publicKey` in the current one's place and
  // deletes the current private key; false (nothing changed) when no such pending key is there.
  promotePendingKey(role: OnlineRole, publicKey: string): Promise<boolean>;
  setPending(row: TrustPendingRow): Promise<void>;
  clearPending(role: PendingRole): Promise<void>;
}
