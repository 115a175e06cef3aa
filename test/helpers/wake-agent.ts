// A real agent's heartbeat loop with wake-ups (src/agent/heartbeat-loop.ts, wake-wait.ts) over the
// real control-plane client, on the real clock, against control-plane URLs a test starts: a
// helper that reports web at `current` and takes every update; every request counted and every
// desired entry recorded with the time it came.
import type { KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { format } from 'node:util';
import path from 'node:path';
import { ActedStore } from '../../src/agent/acted-store.js';
import { createControlPlaneClient, type ControlPlaneClient, type PostAnswer } from '../../src/agent/control-plane-client.js';
import { HeartbeatLoop } from '../../src/agent/heartbeat-loop.js';
import type { HelperPort } from '../../src/agent/helper-port.js';
import { Outbox } from '../../src/agent/outbox.js';
import { SeqStore } from '../../src/agent/seq-store.js';
import { createWakeSleep } from '../../src/agent/wake-wait.js';
import { HEARTBEAT_PATH, type DesiredEntry } from '../../src/core/control-api.js';
import { systemClock } from '../../src/platform/clock.js';
import { keyIdOf } from '../../src/platform/keys.js';
import { WAIT_AUTH_TTL_MS, waitAuthorization } from '../../src/platform/wait-auth.js';

export interface WakeAgent {
  client: ControlPlaneClient;
  // Requests sent: heartbeats (POST) and waits (GET), and when each heartbeat went (ms, real clock).
  posts: number;
  gets: number;
  heartbeatTimes: number[];
  // Each desired entry the agent handed on, with the time it did (before the fetch jitter: the
  // time its heartbeat's answer came).
  desired: Array<{ entry: DesiredEntry; at: number }>;
  logs: string[];
  stop(): Promise<void>;
}

export async function startWakeAgent(o: { urls: string[]; nodeId: string; nodeKey: KeyObject; helperKey: KeyObject; heartbeatSeconds: number; current?: string }): Promise<WakeAgent> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-wake-agent-'));
  const logs: string[] = [];
  const log = (fmt: string, ...args: unknown[]) => logs.push(`${new Date().toISOString()} ${format(fmt, ...args)}`);
  const client = await createControlPlaneClient({ url: o.urls }, { log });
  const a: WakeAgent = {
    client,
    posts: 0,
    gets: 0,
    heartbeatTimes: [],
    desired: [],
    logs,
    stop: async () => {},
  };
  const helper: HelperPort = {
    receipts: async () => ({ helperKeyId: keyIdOf(o.helperKey), receipts: [] }),
    status: async () => ({ root: '/', pid: 1, startedAt: 1, recovering: false, apps: [{ name: 'web', runner: 'process', current: o.current ?? '1.0.0', currentState: 'valid', previous: null, highestActive: null, hold: null, blocked: null, quarantined: [], running: null, lastAttempt: null, supervisor: null }] as never }),
    update: async (e) => ({ attemptId: e.attemptId, app: e.app, accepted: true }) as never,
    rollback: async (e) => ({ attemptId: e.attemptId, app: e.app, accepted: true }) as never,
    confirm: async () => {
      throw Object.assign(new Error('no confirm waits'), { code: 'FORBIDDEN' });
    },
  };
  a.stop = await runWakingAgentLoop({
    dir, client, helper, nodeId: o.nodeId, nodeKey: o.nodeKey, helperKey: o.helperKey, heartbeatSeconds: o.heartbeatSeconds, log, desired: a.desired,
    posting: (endpoint) => {
      a.posts++;
      if (endpoint === HEARTBEAT_PATH) a.heartbeatTimes.push(Date.now());
    },
    waiting: () => a.gets++,
  });
  return a;
}

export interface WakingAgentLoop {
  // The agent's folder (its seq, outbox and acted files), removed at stop.
  dir: string;
  client: ControlPlaneClient;
  helper: HelperPort;
  nodeId: string;
  nodeKey: KeyObject;
  // The helper key the agent checks its receipts against (public half).
  helperKey: KeyObject;
  heartbeatSeconds: number;
  log: (fmt: string, ...args: unknown[]) => void;
  // Each new desired entry is pushed here with the time its heartbeat's answer came.
  desired: Array<{ entry: DesiredEntry; at: number }>;
  // Called before each POST (with its endpoint) and each wait, and with each answer.
  posting(endpoint: string): void;
  posted?(endpoint: string, answer: PostAnswer): void;
  waiting(): void;
  waited?(answer: PostAnswer): void;
}

// Runs the real agent's heartbeat loop with its wake-up waits (heartbeat-loop.ts, wake-wait.ts)
// over `client`, on the real clock, until the returned stop, which also closes the client and
// removes `dir`. Shared by the tests' wake agent and the targets bench's converging agents.
export async function runWakingAgentLoop(o: WakingAgentLoop): Promise<() => Promise<void>> {
  const { client, log } = o;
  const loop = new HeartbeatLoop({
    clock: systemClock,
    random: Math.random,
    helper: o.helper,
    controlPlane: {
      post: async (endpoint, body, signal, extra) => {
        o.posting(endpoint);
        const answer = await client.post(endpoint, body, signal, extra);
        o.posted?.(endpoint, answer);
        const desired = (answer.json as { desired?: DesiredEntry[] } | undefined)?.desired ?? [];
        for (const entry of desired) if (!o.desired.some((d) => d.entry.attemptId === entry.attemptId)) o.desired.push({ entry, at: Date.now() });
        return answer;
      },
    },
    seq: await SeqStore.open(path.join(o.dir, 'seq.json')),
    outbox: await Outbox.open(path.join(o.dir, 'outbox.json')),
    acted: await ActedStore.open(path.join(o.dir, 'acted.json')),
    nodeId: o.nodeId,
    nodeKey: o.nodeKey,
    loadHelperKey: async () => o.helperKey,
    bootId: 'boot-1',
    agentVersion: '0.1.0',
    heartbeatSeconds: o.heartbeatSeconds,
    wake: createWakeSleep({
      clock: systemClock,
      random: Math.random,
      get: async (request, signal) => {
        o.waiting();
        const answer = await client.get(request, signal);
        o.waited?.(answer);
        return answer;
      },
      authorization: () => waitAuthorization(o.nodeId, Date.now() + WAIT_AUTH_TTL_MS, o.nodeKey),
      log,
    }),
    log,
  });
  const stop = new AbortController();
  const running = loop.run(stop.signal);
  return async () => {
    stop.abort();
    await running;
    client.close();
    rmSync(o.dir, { recursive: true, force: true });
  };
}
