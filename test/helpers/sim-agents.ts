// Simulated agents for tests of several steward-control instances (docs/design.md §13): FakeNodes
// (real keys, real signatures) that heartbeat on a loop to whichever instance is first in a
// shared list, move to the next on a connection error, a timeout or a 5xx as the agent does,
// answer every attempt they are asked with an `active` receipt kept in an outbox until acked,
// and remember every attemptId they were sent. Setup goes through a store of the test's own.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { HEARTBEAT_PATH } from '../../src/core/control-api.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { generateKeyPair } from '../../src/platform/keys.js';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { describeRun } from '../../src/control/rollouts/run-status.js';
import type { StopPoint } from '../../src/control/server/test-stop-points.js';
import { createToken } from '../../src/control/enroll/tokens.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { FakeNode } from './control-harness.js';
import { waitUntil, type Daemon } from './fleet.js';

export interface SimFleet {
  nodes: SimAgent[];
  // The instances the agents call, in order of preference (the test changes it).
  urls: string[];
  // Heartbeats every `everyMs` until stop() (which waits for the round in flight).
  start(everyMs: number): void;
  stop(): Promise<void>;
  // Resolves once every agent's outbox is empty (its receipts acknowledged).
  drained(ms: number): Promise<void>;
  // Resolves once the store holds a heartbeat of every node (a run started then targets them all).
  seen(ms: number): Promise<void>;
}

export interface SimAgent {
  fake: FakeNode;
  // attemptIds sent to this node, in order, without repeats.
  attempts: string[];
  // Receipt seqs it made; those not yet acknowledged.
  made: number[];
  outbox: Envelope[];
}

// `count` nodes enrolled through `url` with tokens made in `store`, each reporting web 1.0.0,
// and web 1.1.0 in the catalog (its tarball in `dir`).
export async function enrollSimFleet(store: ControlStore, url: string, count: number, dir: string): Promise<SimFleet> {
  const urls = [url];
  const like = { clock: { now: () => Date.now() }, server: { get url() { return urls[0]!; } }, token: async () => (await store.write((tx) => createToken(tx, 3_600_000))).token };
  const nodes: SimAgent[] = [];
  for (let i = 0; i < count; i++) {
    const fake = await new FakeNode(like, `host-${i}`).enroll();
    fake.setCurrent('web', '1.0.0');
    nodes.push({ fake, attempts: [], made: [], outbox: [] });
  }
  nodes.sort((x, y) => (x.fake.nodeId < y.fake.nodeId ? -1 : 1));
  const key = generateKeyPair();
  const file = path.join(dir, 'web-1.1.0.tgz');
  writeFileSync(file, 'tarball of web 1.1.0');
  await addRelease(store, { app: 'web', version: '1.1.0', file, url: null, baseUrl: url, privateKeyPem: key.privatePem, expiresDays: 30, artifactsDir: path.join(dir, 'artifacts') });

  const beat = async (n: SimAgent) => {
    const target = urls[0]!;
    let answer: { status: number; body: any } | null = null;
    try {
      const res = await fetch(`${target}${HEARTBEAT_PATH}`, { method: 'POST', body: n.fake.body({ receipts: n.outbox }), headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(5000) });
      answer = { status: res.status, body: await res.json() };
    } catch {
      answer = null;
    }
    if (!answer || answer.status >= 500) {
      // As the agent does with controlPlane.url as a list: the next one, from then on.
      if (urls[0] === target && urls.length > 1) urls.push(urls.shift()!);
      return;
    }
    if (answer.status !== 200) throw new Error(`heartbeat of ${n.fake.nodeId}: ${answer.status} ${JSON.stringify(answer.body)}`);
    const acked = new Set<number>(answer.body.ackedSeqs);
    n.outbox = n.outbox.filter((e) => !acked.has(JSON.parse(Buffer.from(e.payload, 'base64').toString()).seq));
    for (const d of answer.body.desired as Array<{ app: string; version: string; attemptId: string }>) {
      if (n.attempts.includes(d.attemptId)) continue;
      n.attempts.push(d.attemptId);
      const r = n.fake.receipt({ app: d.app, attemptId: d.attemptId, targetVersion: d.version, outcome: 'active' });
      n.made.push(n.fake.receiptSeq);
      n.outbox.push(r);
      n.fake.setCurrent(d.app, d.version);
    }
  };

  let loop: Promise<void> | null = null;
  let stopping = false;
  let failure: unknown = null;
  return {
    nodes,
    urls,
    start(everyMs) {
      stopping = false;
      loop = (async () => {
        while (!stopping) {
          await Promise.all(nodes.map((n) => beat(n).catch((err: unknown) => void (failure ??= err))));
          await new Promise((r) => setTimeout(r, everyMs));
        }
      })();
    },
    async stop() {
      stopping = true;
      await loop;
      if (failure) throw failure;
    },
    async seen(ms) {
      await waitUntil('every node to heartbeat', ms, async () => ((await store.read((tx) => tx.nodes.list())).every((n) => n.lastHeartbeatAt !== null) ? true : undefined));
    },
    async drained(ms) {
      const deadline = Date.now() + ms;
      while (nodes.some((n) => n.outbox.length > 0)) {
        if (failure) throw failure;
        if (Date.now() > deadline) throw new Error(`outboxes not drained within ${ms} ms: ${nodes.map((n) => n.outbox.length).join(',')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

// Whether process `pid` is stopped (state T in /proc/<pid>/stat).
function isStopped(pid: number): boolean {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
}

// An instance with `point` armed, stopped there; resolves once it is.
export async function stoppedAt(a: Daemon, point: StopPoint): Promise<void> {
  await waitUntil(`instance A to stop at ${point}`, 60_000, async () => (a.output().includes(`stopped at ${point}`) && isStopped(a.child.pid!) ? true : undefined));
}

// What every check of the run's end needs: the run as it ended, and every node's view of it.
export async function assertRunEndedWhole(store: ControlStore, fleet: SimFleet, runId: number): Promise<void> {
  const { run, view, issued, receipts } = await store.read(async (tx) => {
    const run = (await tx.runs.get(runId))!;
    return { run, view: await describeRun(tx, run), issued: await tx.runs.issued(runId), receipts: await tx.receipts.list({ app: 'web' }) };
  });
  assert.equal(run.status, 'succeeded', JSON.stringify(view));
  assert.deepEqual(view.nodes.map((n) => n.state), fleet.nodes.map(() => 'confirmed'));
  assert.equal(issued.length, fleet.nodes.length, 'one attempt per node');
  for (const n of fleet.nodes) {
    const mine = issued.filter((i) => i.nodeId === n.fake.nodeId);
    assert.deepEqual(n.attempts, mine.map((i) => i.attemptId), `${n.fake.hostname} was sent its one attempt and no other`);
    const stored = receipts.filter((r) => r.nodeId === n.fake.nodeId).map((r) => r.seq);
    assert.deepEqual(stored, n.made, `${n.fake.hostname}: every receipt it made is stored`);
  }
}

