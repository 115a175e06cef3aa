// A simulated node for bench/targets-fleet.ts: the real agent's heartbeat loop with its wake-up waits
// (src/agent/heartbeat-loop.ts, wake-wait.ts) over the real control-plane client, on the real clock,
// in front of a simulated helper that installs every desired entry at once: it switches the app's
// current version and makes an `active` receipt signed by the node's helper key, which the agent
// relays with its next heartbeat, as a real helper's would be. Every request is counted, and each
// answered wait and each new desired entry is recorded with the time it came.
import type { KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createControlPlaneClient } from '../../src/agent/control-plane-client.js';
import type { HelperPort } from '../../src/agent/helper-port.js';
import { HEARTBEAT_PATH, type DesiredEntry } from '../../src/core/control-api.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { DOMAINS, keyIdOf, signEnvelope } from '../../src/platform/keys.js';
import { runWakingAgentLoop } from '../../test/helpers/wake-agent.js';

export interface ConvergingAgent {
  nodeId: string;
  // The version of its app that its simulated helper runs now.
  current(): string;
  // Requests sent since the last resetCounts(): heartbeats (POST) and waits (GET).
  posts: number;
  gets: number;
  resetCounts(): void;
  // Times (Date.now()) of each held heartbeat answered `woken` (or wait answered `{woken: true}`,
  // against a control plane that holds none), and of each new desired entry (the answer of the
  // heartbeat that brought it).
  wokenAt: number[];
  desired: Array<{ entry: DesiredEntry; at: number }>;
  stop(): Promise<void>;
}

export interface AgentKeys {
  nodeId: string;
  nodeKey: KeyObject;
  helperPrivate: KeyObject;
  helperPublic: KeyObject;
}

// Starts one agent reporting `app` at `current`, against `url`.
export async function startConvergingAgent(o: AgentKeys & { url: string; heartbeatSeconds: number; app: string; current: string }): Promise<ConvergingAgent> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-bench-agent-'));
  // The agent's log goes nowhere: 100 agents' lines would drown the bench's output.
  const log = () => {};
  const client = await createControlPlaneClient({ url: [o.url] }, { log });
  let current = o.current;
  let previous: string | null = null;
  let receiptSeq = 0;
  const receipts: Envelope[] = [];
  const helper: HelperPort = {
    receipts: async () => ({ helperKeyId: keyIdOf(o.helperPublic), receipts: [...receipts] }) as never,
    status: async () => ({
      root: '/', pid: 1, startedAt: 1, recovering: false,
      apps: [{ name: o.app, runner: 'process', current, currentState: 'valid', previous, highestActive: null, hold: null, blocked: null, quarantined: [], running: null, lastAttempt: null, supervisor: null }],
    }) as never,
    // An install that takes no time: the version switches and its receipt is made now.
    update: async (e) => {
      const now = Date.now();
      receipts.push(signEnvelope(DOMAINS.receipt, {
        v: 1, nodeId: o.nodeId, app: e.app, attemptId: e.attemptId, seq: ++receiptSeq, fromVersion: current, targetVersion: e.version,
        integrity: null, outcome: 'active', startedAt: now, updatedAt: now,
      }, o.helperPrivate));
      previous = current;
      current = e.version;
      return { attemptId: e.attemptId, app: e.app, accepted: true } as never;
    },
    rollback: async () => {
      throw Object.assign(new Error('the bench asks for no rollback'), { code: 'BAD_REQUEST' });
    },
    confirm: async () => {
      throw Object.assign(new Error('no confirm waits'), { code: 'FORBIDDEN' });
    },
  };
  const a: ConvergingAgent = {
    nodeId: o.nodeId,
    current: () => current,
    posts: 0,
    gets: 0,
    resetCounts: () => {
      a.posts = 0;
      a.gets = 0;
    },
    wokenAt: [],
    desired: [],
    stop: async () => {},
  };
  const stopLoop = await runWakingAgentLoop({
    dir, client, helper, nodeId: o.nodeId, nodeKey: o.nodeKey, helperKey: o.helperPublic, heartbeatSeconds: o.heartbeatSeconds, log, desired: a.desired,
    posting: (endpoint) => {
      if (endpoint === HEARTBEAT_PATH) a.posts++;
    },
    posted: (endpoint, answer) => {
      if (endpoint === HEARTBEAT_PATH && answer.status === 200 && (answer.json as { held?: unknown } | undefined)?.held === 'woken') a.wokenAt.push(Date.now());
    },
    waiting: () => a.gets++,
    waited: (answer) => {
      if (answer.status === 200 && (answer.json as { woken?: unknown } | undefined)?.woken === true) a.wokenAt.push(Date.now());
    },
  });
  // Its folder goes with it: 100 agents a run would leave 100 folders in the temporary folder.
  a.stop = async () => {
    await stopLoop();
    rmSync(dir, { recursive: true, force: true });
  };
  return a;
}
