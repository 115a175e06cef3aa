import { StewardError } from '../../core/errors.js';
import { AGENT_APP } from '../../core/name-checks.js';
import type { ReleaseFile } from '../../core/release-schemas.js';
import type { AgentConfirmAnswer } from '../../protocol/answers.js';
import type { Clock } from '../../platform/clock.js';
import type { PeerLookup } from '../../platform/peer-credentials.js';
import { logger } from '../../platform/log.js';
import { readProcIdentity, type ProcIdentity } from '../../platform/proc-identity.js';
import { readNodeId } from '../../host/node-id.js';
import type { HostPaths } from '../../core/paths.js';

const log = logger('helper:probe');

// How far the sentAt of a confirmed heartbeat may be off the helper's clock (the agent's clock
// is the same host's): before the start it names another process's heartbeat, after now it is
// made up.
const CLOCK_SLACK_MS = 1000;

// What the probe of one start of steward-agent waits on (DESIGN §14).
export interface ConfirmWait {
  // The started process: the only one whose confirm counts. Called once, after the start.
  started(identity: ProcIdentity): void;
  // Resolves true once the process confirmed, false when `timeoutMs` passes first.
  confirmed(timeoutMs: number): Promise<boolean>;
  // Ends the wait; a confirm still waiting for `started` is refused. Idempotent.
  close(): void;
}

interface Open {
  version: string;
  attemptId: string;
  // Wall-clock time just before the start: a confirmed heartbeat was sent after it.
  notBefore: number;
  identity: Promise<ProcIdentity | null>;
  setIdentity(identity: ProcIdentity | null): void;
  done: Promise<void>;
  confirm(): void;
  isConfirmed: boolean;
  closed: boolean;
}

// The confirms of new steward-agent processes: one probe waits at a time (the app's lock is
// held through it), and only the process that probe started can end its wait. Who sends a
// confirm is the kernel's answer (SO_PEERCRED pid, then that pid's start time and boot, as the
// supervisor identifies processes); the request's seq and sentAt are the agent's word and only
// bound it in time.
export class AgentConfirms {
  private open: Open | null = null;

  constructor(private readonly clock: Clock) {}

  // Opens the wait of a start of `version` for attempt `attemptId`, before the process starts
  // (a quick agent may confirm before the helper has read its identity).
  expect(version: string, attemptId: string): ConfirmWait {
    let setIdentity!: (identity: ProcIdentity | null) => void;
    let confirm!: () => void;
    const identity = new Promise<ProcIdentity | null>((resolve) => (setIdentity = resolve));
    const done = new Promise<void>((resolve) => (confirm = resolve));
    const w: Open = {
      version,
      attemptId,
      notBefore: this.clock.now(),
      identity,
      setIdentity,
      done,
      isConfirmed: false,
      closed: false,
      confirm: () => {
        w.isConfirmed = true;
        confirm();
      },
    };
    this.open = w;
    return {
      started: (id) => setIdentity(id),
      confirmed: async (timeoutMs) => {
        if (w.isConfirmed) return true;
        const stop = new AbortController();
        await Promise.race([done, this.clock.sleep(timeoutMs, stop.signal).catch(() => {})]);
        stop.abort();
        return w.isConfirmed;
      },
      close: () => {
        w.closed = true;
        setIdentity(null);
        if (this.open === w) this.open = null;
      },
    };
  }

  // Takes a confirm over helper.sock from `peer`. Throws FORBIDDEN when no probe waits or the
  // peer is not the process the waiting probe started; BAD_REQUEST when the heartbeat it names
  // was sent before that start or in the future.
  async confirm(peer: PeerLookup, claim: { seq: number; sentAt: number }): Promise<AgentConfirmAnswer> {
    const w = this.open;
    if (!w) throw new StewardError('FORBIDDEN', `${AGENT_APP}: no update of ${AGENT_APP} waits for a confirm; nothing changed`);
    if (!peer.ok) throw new StewardError('FORBIDDEN', `${AGENT_APP} ${w.version}: cannot tell which process sent the confirm (${peer.why}); not taken`);
    const expected = await w.identity;
    if (!expected || w.closed) throw new StewardError('FORBIDDEN', `${AGENT_APP} ${w.version}: the probe of attempt ${w.attemptId} is over; the confirm of pid ${peer.peer.pid} is not taken`);
    const actual = await readProcIdentity(peer.peer.pid);
    const same = actual !== null && actual.pid === expected.pid && actual.startTicks === expected.startTicks && actual.bootId === expected.bootId;
    if (!same) {
      log('WARNING: confirm refused app=%s version=%s attempt=%s from pid=%d uid=%d: not the started process pid=%d', AGENT_APP, w.version, w.attemptId, peer.peer.pid, peer.peer.uid, expected.pid);
      throw new StewardError('FORBIDDEN', `${AGENT_APP} ${w.version}: the confirm came from pid ${peer.peer.pid}, not from the ${AGENT_APP} process attempt ${w.attemptId} started (pid ${expected.pid}); not taken`);
    }
    const now = this.clock.now();
    if (claim.sentAt < w.notBefore - CLOCK_SLACK_MS || claim.sentAt > now + CLOCK_SLACK_MS) {
      throw new StewardError(
        'BAD_REQUEST',
        `${AGENT_APP} ${w.version}: the confirmed heartbeat seq ${claim.seq} says sentAt ${claim.sentAt}, outside this process's life (${w.notBefore} to ${now}); not taken`,
      );
    }
    log('confirm taken app=%s version=%s attempt=%s pid=%d heartbeat seq=%d sentAt=%d', AGENT_APP, w.version, w.attemptId, expected.pid, claim.seq, claim.sentAt);
    w.confirm();
    return { app: AGENT_APP, version: w.version, attemptId: w.attemptId, pid: expected.pid };
  }
}

// Whether a start of `app` with release file `rf` is probed by the agent's confirm: a release
// of steward-agent that asks for it (`health.confirm`), on an enrolled host (state/node.json;
// one that cannot be read counts as enrolled). Without enrollment the agent heartbeats to no
// one: its probe is the process staying up (the probe without `confirm`).
export async function wantsConfirm(paths: HostPaths, app: string, rf: ReleaseFile): Promise<boolean> {
  if (app !== AGENT_APP || rf.health?.confirm !== 'heartbeat') return false;
  const nodeId = await readNodeId(paths).catch(() => 'unreadable');
  return nodeId !== null;
}
