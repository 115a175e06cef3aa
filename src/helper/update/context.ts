import type { LastTransfer } from '../../protocol/answers.js';
import type { HostConfig } from '../../core/config-schema.js';
import type { HostPaths } from '../../core/paths.js';
import type { ReceiptInput, StoredReceipt } from '../receipts/receipt-store.js';
import type { Clock } from '../../platform/clock.js';
import type { Faults } from '../../platform/faults.js';
import type { AppLocks } from '../app-locks.js';
import type { AppRunner, RunAs, StartedProcess } from '../runners/runner.js';
import type { StageIO } from '../stage/stage-io.js';
import type { AgentConfirms } from './agent-confirm.js';
import type { ProbeOptions, ProbeResult, ProbeSpec } from './probe.js';

// Where receipts go: seq allocated and durable under one lock; idempotent per attempt.
export interface ReceiptSink {
  emit(input: ReceiptInput): Promise<StoredReceipt>;
  find(app: string, attemptId: string): Promise<StoredReceipt | null>;
  // Throws RECEIPTS_UNRELAYED when the app's receipts the agent has not relayed leave no room for
  // one more attempt; read-only.
  checkRoom(app: string): Promise<void>;
}

export type { ReceiptInput, StoredReceipt };

// The `unit` runner's seam: an existing systemd unit whose own Restart= governs it.
export interface UnitControl {
  // Starts the unit and waits for its start job. Idempotent.
  start(unit: string): Promise<void>;
  // Stops the unit and waits for its stop job. Idempotent: stopped or unknown is success.
  stop(unit: string): Promise<void>;
  // What systemd says of it; mainPid 0 when no main process runs.
  status(unit: string): Promise<{ activeState: string; subState: string; mainPid: number; nRestarts: number }>;
}

// Everything the update transaction touches, built once by the helper's main.
export interface UpdateContext {
  paths: HostPaths;
  config: HostConfig;
  clock: Clock;
  io: StageIO;
  runner: AppRunner;
  units: UnitControl;
  receipts: ReceiptSink;
  faults: Faults;
  locks: AppLocks;
  probe: (spec: ProbeSpec, opts: ProbeOptions) => Promise<ProbeResult>;
  // The new steward-agent's confirms over helper.sock, which its probe waits on (docs/design.md §14).
  agentConfirms: AgentConfirms;
  // The account a process app runs as; null means the helper's own user.
  runAs: (app: string) => Promise<RunAs | null>;
  // Apps blocked in memory because even `blocked` could not be written (a full disk).
  blockedInMemory: Map<string, { reason: string; message: string; since: number }>;
  // How each app's last update since this helper started got its bytes (docs/design.md §20.2), for
  // `status` (`lastTransfer`); in memory only. Absent in cores built for tests: nothing recorded.
  lastTransfers?: Map<string, LastTransfer>;
  stopTimeoutMs: number;
  // When this helper started (the `since` of an app's signal counts that no activation began, docs/design.md §19).
  startedAt?: number;
  // Told of every process started, so the supervisor hears its exit at once.
  onStarted?: (app: string, proc: StartedProcess) => void;
}
