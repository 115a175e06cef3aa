// What the dashboard reads of the admin API's answers: the CLI's --json documents
// (docs/admin-api.md). Written out here because the browser code imports nothing of the
// server's; only the fields the pages show.
export type Role = 'viewer' | 'operator' | 'admin';

export interface Session {
  operator: string;
  role: Role;
  csrfToken: string;
}

export interface AppReport {
  name: string;
  current: string | null;
  previous: string | null;
  held: boolean;
  blocked: boolean;
  supervisor: { state: string; pid?: number; attempts: number; since: number | null };
  // Heartbeats v4 (docs/design.md §17): the open watch window after the version's activation, and how
  // the app's last process ended.
  watch?: { version: string; until: number; restarts: number; maxRestarts: number } | null;
  // Heartbeats v5: exits since the app's last activation.
  restarts?: number;
  lastExit?: { code: number | null; signal: string | null; reason?: string } | null;
  // Heartbeats v6 (docs/design.md §18): the host's hold, who put it, why and until when.
  hold?: { by: string; reason: string; at: number; until: number | null } | null;
}

export interface NodeView {
  nodeId: string;
  hostname: string;
  labels: Record<string, string>;
  enrolledAt: number;
  lastHeartbeatAt: number | null;
  heartbeatAgeMs: number | null;
  // Not heard from within 3 heartbeat intervals: the rollouts' and the metrics' rule, decided
  // by the server (which knows the interval).
  stale: boolean;
  bootId: string | null;
  agentVersion: string | null;
  clockSkewMs: number | null;
  clockSkewRefused: { since: number; lastAt: number; clockSkewMs: number } | null;
  apps: AppReport[];
  receiptLost: number[];
  // How its host trusts releases (heartbeat v8; null: an older agent), and whether its TUF
  // metadata is stale while the fleet has a repository (docs/design.md §21.2). Absent from an
  // older steward-control.
  trust?: { scheme: 'keys' | 'tuf'; rootVersion?: number; timestampVersion?: number; timestampAgeSeconds?: number; at: number } | null;
  metadataStale?: boolean;
}

export interface ReceiptView {
  seq: number;
  nodeId: string;
  app: string;
  attemptId: string;
  runId: number | null;
  outcome: string;
  reasonCode: string | null;
  reasonMessage: string | null;
  fromVersion: string | null;
  targetVersion: string | null;
  startedAt: number;
  updatedAt: number;
  receivedAt: number;
  counts: boolean;
  logFile: string | null;
  logTail: string | null;
  logTailWithheld: boolean;
  envelope: { payload: string } | null;
}

export interface RunNode {
  nodeId: string;
  state: string;
  reason: string | null;
  batch: number | null;
  attemptId: string | null;
  issuedAt: number | null;
  notAfter: number | null;
  outcome: string | null;
  reasonCode: string | null;
  reasonMessage?: string | null;
  receiptLost: number[];
}

export interface Counts {
  targeted: number;
  notTargeted: number;
  confirmed: number;
  alreadyCurrent: number;
  refused: number;
  reverted: number;
  pending: number;
  behind?: number;
}

export interface RunView {
  id: number;
  app: string;
  version: string;
  status: string;
  startedAt: number;
  endedAt: number | null;
  paused: boolean;
  selector: string;
  canaries: number;
  canaryNodes: string[];
  batch: string;
  batchSize: number;
  bakeMs: number;
  bakeUntil: number | null;
  maxFailures: number;
  failures: number;
  maxRefused: string;
  refusedLimit: number;
  maxFetchFailures?: string;
  verdictTimeoutMs: number;
  windows: string[];
  tz: string;
  nextWindowAt: number | null;
  startAt: number | null;
  retryOf: number | null;
  haltReason: { code: string; nodeId: string | null; message: string } | null;
  // Why an analysis paused it (ANALYSIS_INCONCLUSIVE); absent from an older control plane.
  pauseReason?: { code: string; message: string } | null;
  analysis?: AnalysisView;
  counts: Counts;
  nodes: RunNode[];
  behind: Array<{ nodeId: string; hostname?: string; current: string | null }>;
  ahead?: Array<{ nodeId: string; hostname?: string; current: string | null }>;
  behindRunId: number | null;
}

// A run's automated analysis (docs/design.md §19), as `rollout status` answers it.
export interface CohortFigures {
  nodes: number;
  value: number | null;
  sample: number;
}

export interface AnalysisSignal {
  signal: string;
  verdict: string;
  canary: CohortFigures;
  baseline: CohortFigures;
  why: string;
}

export interface AnalysisStep {
  step: number;
  from: number;
  to: number;
  verdict: string | null;
  judgedAt: number | null;
  mode: string | null;
  effect: string | null;
  summary: string | null;
  signals: AnalysisSignal[];
  series: Record<string, { canary: Array<number | null>; baseline: Array<number | null> }> | null;
  resumedAt: number | null;
  resumedBy: string | null;
}

export interface AnalysisView {
  mode: string;
  windowMs: number;
  thresholds: { restartRate: number; livenessRate: number; errorRatio: number };
  waiting: { step: number; from: number; until: number } | null;
  steps: AnalysisStep[];
}

// One run of `rollout list` (newest first): what its row records, not planned again.
export interface RunSummary {
  id: number;
  app: string;
  version: string;
  status: string;
  paused: boolean;
  stopped: boolean;
  startedAt: number;
  endedAt: number | null;
  selector: string;
  retryOf: number | null;
  retryBehind: boolean;
  haltReason: { code: string; nodeId: string | null; message: string } | null;
}

export interface DryRunView {
  dryRun: true;
  run: { app: string; version: string; selector: string; maxFailures: number; windows: string[]; tz: string; bakeMs: number; batch: string };
  nodes: Array<{ nodeId: string; hostname?: string; state: string; reason: string | null; batch: number | null }>;
  counts: Counts;
  batchSize: number;
  refusedLimit: number;
  batches: Array<{ batch: number; nodes: string[]; at: number; notAfter: number | null }>;
  status: string;
  endsAt: number | null;
  truncated: boolean;
  hostnames?: Record<string, string>;
}

export interface AuditRow {
  id: number;
  at: number;
  operator: string | null;
  action: string;
  target: string | null;
  source: string | null;
  details: Record<string, unknown>;
}

// `target status` and `target list` (docs/control-plane.md, targets).
export interface BehindReason {
  reason: string;
  since: number | null;
  by: string | null;
  until: number | null;
  code: string | null;
  message: string;
}

export interface TargetSummary {
  name: string;
  app: string;
  version: string;
  priority: number;
  selector: string;
  paused: boolean;
  setAt: number;
  setBy: string | null;
  status: 'converged' | 'converging' | 'paused' | 'halted' | 'waiting';
  run: { id: number; version: string; status: string } | null;
  halted: { runId: number; code: string | null; message: string } | null;
  counts: { selected: number; current: number; behind: number };
  behind: Record<string, number>;
}

export interface TargetView extends TargetSummary {
  nodes: Array<{ nodeId: string; hostname: string; version: string | null; state: 'current' | 'behind'; reason: BehindReason | null }>;
}
