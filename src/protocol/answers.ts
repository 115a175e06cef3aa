// What each op of the local API answers (docs/design.md §7), shared by the helper that makes the
// answers and the CLI and agent that read them. Types only: nothing here is loaded at run time.
import type { ExitReason } from '../core/exit-reasons.js';
import type { HoldLift, HoldView } from '../core/hold-limits.js';
import type { Envelope } from '../core/release-schemas.js';
import type { AppState } from '../core/state-schemas.js';
import type { OpName } from './ops.js';
import type { AcceptedAnswer, StageResult, StageTransfer, UpdateAnswer } from './schemas.js';

export type { AcceptedAnswer, StageResult, UpdateAnswer };

// The work that holds an app's lock in the helper: an op, its attempt and its phase.
export interface RunningWork {
  attemptId: string;
  op: string;
  phase: string;
  startedAt: number;
}

// `status`: one app.
// How an app's last update since the helper started got its bytes (docs/design.md §20.2): the
// update answer's `transfer`, its attempt and version, and `indexed` when a verified indexed
// manifest came with the request (so `via` says whether the index path was taken).
export interface LastTransfer extends StageTransfer {
  attemptId: string;
  version: string;
  indexed: boolean;
  fallback?: { code: string | null; message: string };
  at: number;
}

export interface AppStatus {
  name: string;
  runner: 'process' | 'unit' | 'self';
  current: string | null;
  currentState: 'absent' | 'valid' | 'invalid';
  previous: string | null;
  highestActive: string | null;
  // The hold with its expiry (`until`, null: none; absent from helpers before docs/design.md §18).
  hold: (AppState['hold'] & { until?: number | null }) | null;
  // The last hold lifted, by its expiry or release-hold (absent from helpers before §18).
  holdLifted?: HoldLift | null;
  blocked: AppState['blocked'];
  quarantined: string[];
  running: RunningWork | null;
  // The last update's transfer since the helper started (absent: none, or a helper before §20.2).
  lastTransfer?: LastTransfer;
  lastAttempt: {
    attemptId: string;
    outcome: string;
    fromVersion: string | null;
    targetVersion: string;
    updatedAt: number;
    reason?: { code: string; message: string };
    retryAfter?: number;
    logFile?: string;
  } | null;
  journalError?: string;
  stateError?: string;
  // The supervisor's view (process apps): what should run, which pid, the respawn budget.
  supervisor: {
    expected: 'running' | 'stopped';
    state: 'running' | 'waiting' | 'error' | 'stopped';
    pid: number | null;
    version: string | null;
    attempts: number;
    nextAttemptAt: number | null;
    // `reason` when steward knows why beyond the code or signal (docs/design.md §17).
    lastExit: { code: number | null; signal: string | null; reason?: ExitReason } | null;
    // Exits of its process heard since the app's last activation (docs/design.md §17).
    restartsSinceActivation?: number;
    giveUpReason: string | null;
    since: number | null;
  } | null;
  // The app steward (runner `self`): the version this helper runs and how the launcher chose it
  // (`trial`, `current`, `package`, `fallback`; null without a launcher); `fallback` when the
  // committed version was set aside (reason FALLBACK); files of the trial that are unreadable.
  self?: {
    version: string;
    decision: string | null;
    fallback: { code: 'FALLBACK'; version: string; starts: number; message: string } | null;
    // The installed package's version was tried and did not commit: this helper runs an older
    // steward than dpkg installed (REPLACEMENT_UNHEALTHY; absent from helpers before it).
    packageReverted?: { code: 'REPLACEMENT_UNHEALTHY'; version: string; message: string } | null;
    problems: string[];
  };
  // An open watch window after `active` (docs/design.md §17): the activation watched, until when,
  // the exits heard in it so far and how many it allows; `closing` once its rollback was asked for.
  watch?: { attemptId: string; version: string; fromVersion: string; until: number; restarts: number; maxRestarts: number; closing?: string } | null;
  // The app's signals for canary analysis (docs/design.md §19; absent from helpers before it, and
  // for the app steward): counts since `since` (epoch ms: the activation of its current release, or
  // the helper's start), CPU of its processes since then, their RSS now; `metrics`, the current
  // release's `metrics` block (loopback only, checked on the host), which the agent scrapes.
  signals?: {
    since: number;
    restarts: number;
    livenessFailures: number;
    watchdogKills: number;
    oomKills: number;
    cpuSeconds: number;
    rssBytes: number;
    metrics?: { url: string; requests: string; errors: string };
  };
  // A `unit` app: what systemd says of its unit (its own Restart= keeps it up).
  unit?: { name: string; activeState: string; subState: string; mainPid: number; nRestarts: number } | { name: string; error: string };
}

// `status`: the helper and every app asked for.
export interface StatusResult {
  root: string;
  pid: number;
  startedAt: number;
  recovering: boolean;
  apps: AppStatus[];
  // How the host trusts releases (docs/design.md §21); absent from a helper before it.
  trust?: TrustStatus;
}

// The trust `status` shows: the trust-refresh answer, whether that timestamp has expired by this
// host's clock, and why the store could not be read, when it could not (then scheme is `tuf`:
// something is there, and nothing of it is trusted).
export interface TrustStatus extends TrustAnswer {
  timestampExpired?: boolean;
  error?: string;
}

// `releases`: one staged version.
export interface ReleaseInfo {
  version: string;
  valid: boolean;
  current: boolean;
  previous: boolean;
  signed: boolean | null;
  keyId: string | null;
  tarballIntegrity: string | null;
  stagedAt: number | null;
  // inForce: the version is held back now (quarantineInForce: retryAfter ahead, and trusted).
  quarantine: { failures: number; retryAfter: number; inForce: boolean } | null;
}

// `releases`: an app's staged versions, current, previous and staging folders.
export interface ReleasesResult {
  app: string;
  current: string | null;
  currentState: 'absent' | 'valid' | 'invalid';
  previous: string | null;
  highestActive: string | null;
  releases: ReleaseInfo[];
  staging: string[];
}

// `receipts`: signed receipts, sorted by seq.
export interface ReceiptsResult {
  // The helper key's id; callers verify against helper.pub themselves.
  helperKeyId: string;
  receipts: Envelope[];
}

// `start`, `stop`, `restart`.
export interface RunStateAnswer {
  app: string;
  op: 'start' | 'stop' | 'restart';
  changed: boolean;
  pid: number | null;
  version: string | null;
}

// `prune`: the versions removed.
export interface PruneAnswer {
  app: string;
  removed: string[];
}

// `verify` (docs/design.md §20): per app, the objects and staged trees checked and what changed.
export interface VerifyProblem {
  kind: 'object' | 'tree';
  // The object's name (or a stray file's path), or the tree's version.
  name: string;
  why: string;
}
export interface VerifyAnswer {
  apps: Array<{ app: string; objects: number; objectBytes: number; trees: number; problems: VerifyProblem[] }>;
}

// `release-hold`: whether there was a hold to clear, and the hold cleared (absent from helpers
// before docs/design.md §18).
export interface ReleaseHoldAnswer {
  app: string;
  released: boolean;
  hold?: HoldView | null;
}

// `hold`: the hold put, and the one it replaced, if any (docs/design.md §18).
export interface HoldAnswer {
  app: string;
  hold: HoldView;
  replaced: HoldView | null;
}

// `agent-confirm`: the probe of steward-agent `version` (or the trial of steward `version`; `app`
// says which) of attempt `attemptId` took the confirm of
// its process `pid`.
export interface AgentConfirmAnswer {
  app: string;
  version: string;
  attemptId: string;
  pid: number;
}

// The answer of each op.
export interface Answers {
  status: StatusResult;
  receipts: ReceiptsResult;
  releases: ReleasesResult;
  stage: StageResult;
  update: UpdateAnswer | AcceptedAnswer;
  rollback: UpdateAnswer | AcceptedAnswer;
  recover: UpdateAnswer | AcceptedAnswer;
  start: RunStateAnswer;
  stop: RunStateAnswer;
  restart: RunStateAnswer;
  prune: PruneAnswer;
  verify: VerifyAnswer;
  'release-hold': ReleaseHoldAnswer;
  hold: HoldAnswer;
  'agent-confirm': AgentConfirmAnswer;
  'trust-refresh': TrustAnswer;
  'trust-set-root': TrustAnswer;
}

// `trust-refresh` and `trust-set-root` (docs/design.md §21): what the helper trusts now. `keys`
// before any TUF root; then the root's and the newest timestamp's versions and the timestamp's
// x-steward-signed-at (epoch ms), when it has them.
export interface TrustAnswer {
  scheme: 'keys' | 'tuf';
  rootVersion?: number;
  timestampVersion?: number;
  timestampSignedAt?: number;
}

// The answer of op `K` (an op without one here does not compile).
export type AnswerOf<K extends OpName> = Answers[K];
