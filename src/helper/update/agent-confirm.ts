import { StewardError } from '../../core/errors.js';
import { AGENT_APP } from '../../core/name-checks.js';
import { SELF_APP } from '../../core/self-schemas.js';
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

// What the probe of one start of steward-agent waits on (docs/design.md §14).
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

// A self-update trial's wait (docs/design.md §14, step 3): the round trip with the agent that already
// runs, proved by its own process confirming a heartbeat it sent while this helper ran.
interface TrialWait {
  // What the confirm's answer names (the trial's steward version and attempt).
  version: string;
  attemptId: string;
  notBefore: number;
  // The agent app's running process now (the supervisor's record, or its unit's MainPID).
  running: () => Promise<ProcIdentity | null>;
  confirm(): void;
}

// The confirms of new steward-agent processes: one probe waits at a time (the app's lock is
// held through it), and only the process that probe started can end its wait. Who sends a
// confirm is the kernel's answer (SO_PEERCRED pid, then that pid's start time and boot, as the
// supervisor identifies processes); the request's seq and sentAt are the agent's word and only
// bound it in time.
export class AgentConfirms {
  private open: Open | null = null;
  private trial: TrialWait | null = null;

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

  // Opens the wait of a self-update trial of steward `version` (attempt `attemptId`), before
  // helper.sock is bound: the agent confirms once to each new helper, maybe at once. Resolves
  // once the agent app's running process (`running`, looked up at each confirm: it may have been
  // respawned) confirmed a heartbeat sent after this call. Nothing of any other process counts,
  // whatever it asks (docs/design.md §14: the round trip is the agent's own).
  expectTrial(version: string, attemptId: string, running: () => Promise<ProcIdentity | null>): Promise<void> {
    return new Promise<void>((resolve) => {
      this.trial = {
        version,
        attemptId,
        notBefore: this.clock.now(),
        running,
        confirm: () => {
          this.trial = null;
          resolve();
        },
      };
    });
  }

  // Takes a confirm over helper.sock from `peer`: an update's probe's when one waits, else a
  // trial's. Throws FORBIDDEN when nothing waits or the peer is not the process waited on;
  // BAD_REQUEST when the heartbeat it names was sent before the wait began or in the future.
  async confirm(peer: PeerLookup, claim: { seq: number; sentAt: number }): Promise<AgentConfirmAnswer> {
    const w = this.open;
    if (!w) {
      if (this.trial) return this.confirmTrial(this.trial, peer, claim);
      throw new StewardError('FORBIDDEN', `${AGENT_APP}: no update of ${AGENT_APP} waits for a confirm; nothing changed`);
    }
    if (!peer.ok) throw new StewardError('FORBIDDEN', `${AGENT_APP} ${w.version}: cannot tell which process sent the confirm (${peer.why}); not taken`);
    const expected = await w.identity;
    if (!expected || w.closed) throw new StewardError('FORBIDDEN', `${AGENT_APP} ${w.version}: the probe of attempt ${w.attemptId} is over; the confirm of pid ${peer.peer.pid} is not taken`);
    if (!(await isPeer(peer.peer.pid, expected))) {
      log('WARNING: confirm refused app=%s version=%s attempt=%s from pid=%d uid=%d: not the started process pid=%d', AGENT_APP, w.version, w.attemptId, peer.peer.pid, peer.peer.uid, expected.pid);
      throw new StewardError('FORBIDDEN', `${AGENT_APP} ${w.version}: the confirm came from pid ${peer.peer.pid}, not from the ${AGENT_APP} process attempt ${w.attemptId} started (pid ${expected.pid}); not taken`);
    }
    this.checkSentAt(`${AGENT_APP} ${w.version}`, w.notBefore, claim);
    log('confirm taken app=%s version=%s attempt=%s pid=%d heartbeat seq=%d sentAt=%d', AGENT_APP, w.version, w.attemptId, expected.pid, claim.seq, claim.sentAt);
    w.confirm();
    // The started process is the agent that runs now: its heartbeat is a trial's round trip too.
    if (this.trial && claim.sentAt >= this.trial.notBefore - CLOCK_SLACK_MS) this.trial.confirm();
    return { app: AGENT_APP, version: w.version, attemptId: w.attemptId, pid: expected.pid };
  }

  private async confirmTrial(t: TrialWait, peer: PeerLookup, claim: { seq: number; sentAt: number }): Promise<AgentConfirmAnswer> {
    const what = `${SELF_APP} ${t.version} on trial`;
    if (!peer.ok) throw new StewardError('FORBIDDEN', `${what}: cannot tell which process sent the confirm (${peer.why}); not taken`);
    const expected = await t.running();
    if (!expected || !(await isPeer(peer.peer.pid, expected))) {
      log('WARNING: trial confirm refused app=%s version=%s attempt=%s from pid=%d uid=%d: not the running %s process (pid=%s)', SELF_APP, t.version, t.attemptId, peer.peer.pid, peer.peer.uid, AGENT_APP, expected?.pid ?? 'none');
      throw new StewardError('FORBIDDEN', `${what}: the confirm came from pid ${peer.peer.pid}, not from the running ${AGENT_APP} process (${expected ? `pid ${expected.pid}` : 'none runs'}); not taken`);
    }
    this.checkSentAt(what, t.notBefore, claim);
    log('trial confirm taken app=%s version=%s attempt=%s from %s pid=%d heartbeat seq=%d sentAt=%d', SELF_APP, t.version, t.attemptId, AGENT_APP, expected.pid, claim.seq, claim.sentAt);
    t.confirm();
    return { app: SELF_APP, version: t.version, attemptId: t.attemptId, pid: expected.pid };
  }

  private checkSentAt(what: string, notBefore: number, claim: { seq: number; sentAt: number }): void {
    const now = this.clock.now();
    if (claim.sentAt < notBefore - CLOCK_SLACK_MS || claim.sentAt > now + CLOCK_SLACK_MS) {
      throw new StewardError('BAD_REQUEST', `${what}: the confirmed heartbeat seq ${claim.seq} says sentAt ${claim.sentAt}, outside the wait for it (${notBefore} to ${now}); not taken`);
    }
  }
}

// Whether the process with `pid` (a socket peer's, from SO_PEERCRED) is `expected`: the same
// pid, start time and boot, so a reused pid is not taken for it.
async function isPeer(pid: number, expected: ProcIdentity): Promise<boolean> {
  const actual = await readProcIdentity(pid);
  return actual !== null && actual.pid === expected.pid && actual.startTicks === expected.startTicks && actual.bootId === expected.bootId;
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
