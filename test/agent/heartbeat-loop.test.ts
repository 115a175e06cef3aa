import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ActedStore } from '../../src/agent/acted-store.js';
import { HeartbeatLoop } from '../../src/agent/heartbeat-loop.js';
import type { HelperPort } from '../../src/agent/helper-port.js';
import { Outbox } from '../../src/agent/outbox.js';
import { SeqStore } from '../../src/agent/seq-store.js';
import type { DesiredEntry } from '../../src/core/control-api.js';
import { StewardError } from '../../src/core/errors.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import type { Clock } from '../../src/platform/clock.js';
import { DOMAINS, keyIdOf, signEnvelope } from '../../src/platform/keys.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';

const NOW = 1_800_000_000_000;

interface Rig {
  dir: string;
  cp: FakeControlPlane;
  nodeKey: KeyObject;
  helperKey: { privateKey: KeyObject; publicKey: KeyObject };
  receipts: Envelope[];
  updates: DesiredEntry[];
  rollbacks: DesiredEntry[];
  updateAnswer: (e: DesiredEntry) => Promise<unknown>;
  // What the agent confirmed to the helper, and how the helper answers.
  confirms: { seq: number; sentAt: number }[];
  confirmAnswer: () => Promise<unknown>;
  // The helper that answers status (a self-update replaces it), and its apps.
  helper: { pid: number; startedAt: number };
  apps: unknown[];
  // The heartbeat versions the control plane's answers list (undefined: an older one, none).
  heartbeatVersions: number[] | undefined;
  // The agent's scrapes of the apps' own metrics (docs/design.md §19); none: no scraper.
  metrics?: NonNullable<ConstructorParameters<typeof HeartbeatLoop>[0]['metrics']>;
  logs: string[];
  clock: Clock & { t: number; mono: number };
  // A fresh agent over the same files (a restart).
  agent(): Promise<{ loop: HeartbeatLoop; seq: SeqStore; outbox: Outbox; acted: ActedStore }>;
  cleanup(): void;
}

function receipt(rig: Pick<Rig, 'helperKey'>, seq: number, over: Record<string, unknown> = {}): Envelope {
  return signEnvelope(
    DOMAINS.receipt,
    { v: 1, nodeId: 'node-1', app: 'web', attemptId: `a-${seq}`, seq, fromVersion: '1.0.0', targetVersion: '1.1.0', integrity: null, outcome: 'active', startedAt: NOW, updatedAt: NOW, ...over },
    rig.helperKey.privateKey,
  );
}

function makeRig(): Rig {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-agent-loop-'));
  const node = generateKeyPairSync('ed25519');
  const helperKey = generateKeyPairSync('ed25519');
  const cp = new FakeControlPlane();
  cp.now = () => NOW;
  cp.heartbeatSeconds = 30;
  cp.addNode('node-1', node.publicKey, helperKey.publicKey);
  const clock = {
    t: NOW,
    mono: 0,
    now: () => clock.t,
    monotonic: () => clock.mono,
    sleep: async () => {},
  };
  const rig: Rig = {
    dir,
    cp,
    nodeKey: node.privateKey,
    helperKey,
    receipts: [],
    updates: [],
    rollbacks: [],
    updateAnswer: async (e) => ({ attemptId: e.attemptId, app: e.app, accepted: true }),
    confirms: [],
    confirmAnswer: async () => {
      throw new StewardError('FORBIDDEN', 'no update of steward-agent waits for a confirm');
    },
    helper: { pid: 1, startedAt: NOW },
    apps: [],
    heartbeatVersions: undefined,
    logs: [],
    clock,
    async agent() {
      const seq = await SeqStore.open(path.join(dir, 'seq.json'));
      const outbox = await Outbox.open(path.join(dir, 'outbox.json'));
      const acted = await ActedStore.open(path.join(dir, 'acted.json'));
      const helper: HelperPort = {
        receipts: async () => ({ helperKeyId: keyIdOf(helperKey.publicKey), receipts: rig.receipts }),
        status: async () => ({ root: '/', ...rig.helper, recovering: false, apps: rig.apps as never }),
        update: async (e) => {
          rig.updates.push(e);
          return (await rig.updateAnswer(e)) as never;
        },
        rollback: async (e) => {
          rig.rollbacks.push(e);
          return (await rig.updateAnswer(e)) as never;
        },
        confirm: async (hb) => {
          rig.confirms.push(hb);
          return (await rig.confirmAnswer()) as never;
        },
      };
      const loop = new HeartbeatLoop({
        clock,
        random: () => 0.5,
        helper,
        controlPlane: {
          post: async (endpoint, body) => {
            // What is on disk at the moment of sending: the seq must already be durable.
            const onDisk = JSON.parse(readFileSync(path.join(dir, 'seq.json'), 'utf8')).lastSeq;
            const sentSeq = JSON.parse(Buffer.from((body as Envelope).payload, 'base64').toString('utf8')).seq;
            assert.equal(onDisk, sentSeq, 'seq.json holds the seq before the heartbeat leaves');
            const r = cp.handle('POST', endpoint, Buffer.from(JSON.stringify(body)));
            const json = r.status === 200 && rig.heartbeatVersions ? { ...(r.json as object), heartbeatVersions: rig.heartbeatVersions } : r.json;
            return { status: r.status, json };
          },
        },
        seq,
        outbox,
        acted,
        nodeId: 'node-1',
        nodeKey: node.privateKey,
        loadHelperKey: async () => helperKey.publicKey,
        bootId: 'boot-1',
        agentVersion: '0.1.0',
        heartbeatSeconds: 30,
        ...(rig.metrics ? { metrics: rig.metrics } : {}),
        log: (fmt: string, ...args: unknown[]) => rig.logs.push([fmt, ...args.map(String)].join(' ')),
      });
      return { loop, seq, outbox, acted };
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
  return rig;
}

test('each heartbeat seq is durable before it is sent, and a restarted agent never reuses one', async () => {
  const rig = makeRig();
  try {
    let a = await rig.agent();
    for (let i = 0; i < 3; i++) assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    a = await rig.agent();
    for (let i = 0; i < 2; i++) assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.deepEqual(rig.cp.heartbeats.map((h) => h.payload.seq), [1, 2, 3, 4, 5]);
    assert.ok(rig.cp.heartbeats.every((h) => h.status === 200));
  } finally {
    rig.cleanup();
  }
});

test('the first heartbeat the control plane answers 200 is confirmed to the helper once, with its seq and sentAt; one not answered is not', async () => {
  const rig = makeRig();
  try {
    rig.cp.script.push({ status: 503, json: { error: { code: 'UNAVAILABLE', message: 'down' } } });
    let answers = 0;
    rig.confirmAnswer = async () => {
      answers++;
      // Unreachable first: asked again after the next answered heartbeat.
      if (answers === 1) throw new StewardError('HELPER_UNREACHABLE', 'no helper');
      return { app: 'steward-agent', version: '0.1.0', attemptId: 'a-1', pid: 1 };
    };
    const a = await rig.agent();
    assert.equal((await a.loop.tick()).outcome.kind, 'unavailable');
    await a.loop.idle();
    assert.deepEqual(rig.confirms, [], 'a 503 is not confirmed');
    rig.clock.t += 1000;
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    await a.loop.idle();
    rig.clock.t += 1000;
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    await a.loop.idle();
    rig.clock.t += 1000;
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    await a.loop.idle();
    const sent = rig.cp.heartbeats.filter((h) => h.status === 200).map((h) => ({ seq: h.payload.seq, sentAt: h.payload.sentAt }));
    assert.deepEqual(rig.confirms, sent.slice(0, 2), 'the first answered heartbeat, then (the helper unreachable) the next; none after the helper answered');
  } finally {
    rig.cleanup();
  }
});

test('the first answered heartbeat after a new helper answered status is confirmed to it once, as a self-update trial waits for', async () => {
  const rig = makeRig();
  try {
    const a = await rig.agent();
    const tick = async () => {
      rig.clock.t += 1000;
      assert.equal((await a.loop.tick()).outcome.kind, 'ok');
      await a.loop.idle();
    };
    await tick();
    await tick();
    assert.equal(rig.confirms.length, 1, 'one confirm to the first helper');
    // The handover's restart: another helper process answers from now on.
    rig.helper = { pid: 2, startedAt: NOW + 5000 };
    await tick();
    await tick();
    const sent = rig.cp.heartbeats.filter((h) => h.status === 200).map((h) => ({ seq: h.payload.seq, sentAt: h.payload.sentAt }));
    assert.deepEqual(rig.confirms, [sent[0], sent[2]], 'the first answered heartbeat through the new helper, and no other');
  } finally {
    rig.cleanup();
  }
});

test("the app steward's FALLBACK goes in heartbeats v2 only once the control plane's answer lists 2; a refusal goes back to v1", async () => {
  const rig = makeRig();
  try {
    rig.apps = [{ name: 'steward', runner: 'self', current: '2.0.0', previous: '1.0.0', hold: null, blocked: null, supervisor: null, self: { version: '1.0.0', decision: 'fallback', fallback: { code: 'FALLBACK', version: '2.0.0', starts: 3, message: 'set aside' }, problems: [] } }];
    const a = await rig.agent();
    const sent = () => rig.cp.heartbeats.map((h) => [h.payload.v, h.payload.apps[0]?.self ?? null]);
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.deepEqual(sent(), [[1, null], [1, null]], 'a control plane that lists no heartbeat versions gets v1, without self');
    rig.heartbeatVersions = [1, 2];
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.deepEqual(sent().slice(2), [[1, null], [2, { fallback: { version: '2.0.0', starts: 3 } }]], 'v2 after the first answer that listed it');
    // A control plane rolled back to one that refuses v2.
    rig.cp.script.push({ status: 400, json: { error: { code: 'BAD_BODY', message: 'v: expected 1' } } });
    rig.heartbeatVersions = undefined;
    assert.equal((await a.loop.tick()).outcome.kind, 'refused');
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.deepEqual(sent().slice(4), [[2, { fallback: { version: '2.0.0', starts: 3 } }], [1, null]]);
  } finally {
    rig.cleanup();
  }
});

test("a package trial that reverted goes in heartbeats v3 (self.packageReverted) only once the control plane lists 3; v2 carries the fallback alone", async () => {
  const rig = makeRig();
  try {
    const reverted = { code: 'REPLACEMENT_UNHEALTHY', version: '3.0.0', message: 'tried and REVERTED' };
    rig.apps = [{ name: 'steward', runner: 'self', current: '2.0.0', previous: '1.0.0', hold: null, blocked: null, supervisor: null, self: { version: '2.0.0', decision: 'current', fallback: null, packageReverted: reverted, problems: [] } }];
    const a = await rig.agent();
    const sent = () => rig.cp.heartbeats.map((h) => [h.payload.v, h.payload.apps[0]?.self ?? null]);
    rig.heartbeatVersions = [1, 2];
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    rig.heartbeatVersions = [1, 2, 3];
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.deepEqual(sent(), [[1, null], [2, { fallback: null }], [2, { fallback: null }], [3, { fallback: null, packageReverted: { version: '3.0.0' } }]]);
  } finally {
    rig.cleanup();
  }
});

test("an app's signals go in heartbeats v7, and the agent scrapes, only once the control plane lists 7 (docs/design.md §19)", async () => {
  const rig = makeRig();
  try {
    const scrapedAt: number[] = [];
    rig.metrics = {
      collect: async (_apps, intervalMs) => {
        scrapedAt.push(intervalMs);
        return new Map([['web', { requests: 10, errors: 1, scrape: { ok: true, at: '2026-01-02T03:10:00.000Z' } }]]);
      },
    };
    rig.apps = [{
      name: 'web', runner: 'process', current: '1.0.0', currentState: 'valid', previous: null, highestActive: '1.0.0', hold: null, blocked: null, quarantined: [], running: null, lastAttempt: null, supervisor: null,
      signals: { since: NOW, restarts: 2, livenessFailures: 0, watchdogKills: 0, oomKills: 0, cpuSeconds: 1.5, rssBytes: 4096, metrics: { url: 'http://127.0.0.1:9100/metrics', requests: 'a', errors: 'b' } },
    }];
    const a = await rig.agent();
    const sent = () => rig.cp.heartbeats.map((h) => [h.payload.v, h.payload.apps[0]?.signals ?? null]);
    rig.heartbeatVersions = [1, 2, 3, 4, 5, 6];
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.deepEqual(sent(), [[1, null], [6, null]], 'a control plane that lists up to 6 gets no signals');
    assert.deepEqual(scrapedAt, [], 'and nothing is scraped for it');
    rig.heartbeatVersions = [1, 2, 3, 4, 5, 6, 7];
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    assert.equal((await a.loop.tick()).outcome.kind, 'ok');
    const signals = { since: new Date(NOW).toISOString(), restarts: 2, livenessFailures: 0, watchdogKills: 0, oomKills: 0, cpuSeconds: 1, rssBytes: 4096, requests: 10, errors: 1, scrape: { ok: true, at: '2026-01-02T03:10:00.000Z' } };
    assert.deepEqual(sent().slice(2), [[6, null], [7, signals]]);
    assert.deepEqual(scrapedAt, [30_000], 'scraped once the answer listed 7, with the heartbeat interval');
  } finally {
    rig.cleanup();
  }
});

test('a 409 SEQ_REPLAYED with lastSeq=N makes the agent persist N and send again at once with seq N+1', async () => {
  const rig = makeRig();
  try {
    (rig.cp.nodes.get('node-1') as { lastSeq: number }).lastSeq = 57;
    const a = await rig.agent();
    const r = await a.loop.tick();
    assert.equal(r.outcome.kind, 'ok');
    assert.deepEqual(rig.cp.heartbeats.map((h) => [h.payload.seq, h.status]), [[1, 409], [58, 200]]);
    assert.equal(a.seq.lastSeq, 58);
    assert.equal((await rig.agent()).seq.lastSeq, 58, 'the jump is durable');
  } finally {
    rig.cleanup();
  }
});

test('a 422 CLOCK_SKEW is logged with both times and backed off, doubling while it lasts', async () => {
  const rig = makeRig();
  try {
    rig.clock.t = NOW + 10 * 60_000;
    const a = await rig.agent();
    const first = await a.loop.tick();
    const second = await a.loop.tick();
    assert.equal(first.outcome.kind, 'clock-skew');
    assert.equal(first.delayMs, 1000);
    assert.equal(second.delayMs, 2000);
    const line = rig.logs.find((l) => l.includes('CLOCK SKEW'));
    assert.ok(line, rig.logs.join('\n'));
    assert.match(line, new RegExp(new Date(NOW).toISOString().replace(/[.]/g, '\\.')));
    assert.match(line, /600000/, 'the offset is in the line');
    rig.clock.t = NOW;
    const third = await a.loop.tick();
    assert.equal(third.outcome.kind, 'ok');
    assert.equal(third.delayMs, 30_000, 'back to the interval once the clock is right');
  } finally {
    rig.cleanup();
  }
});

test('a 401 for an unknown node is logged and backed off', async () => {
  const rig = makeRig();
  try {
    rig.cp.nodes.clear();
    const a = await rig.agent();
    const r1 = await a.loop.tick();
    const r2 = await a.loop.tick();
    const r3 = await a.loop.tick();
    assert.equal(r1.outcome.kind, 'unauthorized');
    assert.deepEqual([r1.delayMs, r2.delayMs, r3.delayMs], [1000, 2000, 4000]);
    assert.ok(rig.logs.some((l) => l.includes('does not accept this node') && l.includes('UNKNOWN_NODE')), rig.logs.join('\n'));
  } finally {
    rig.cleanup();
  }
});

test('a 400 RECEIPT_REJECTED keeps the receipts pending; the next heartbeats go without them until the slower retry', async () => {
  const rig = makeRig();
  try {
    // The control plane knows another helper key for this node: every relayed receipt is rejected.
    const other = generateKeyPairSync('ed25519');
    (rig.cp.nodes.get('node-1') as { helperKey: KeyObject }).helperKey = other.publicKey;
    rig.receipts = [receipt(rig, 1), receipt(rig, 2)];
    const a = await rig.agent();
    const r = await a.loop.tick();
    assert.equal(r.outcome.kind, 'ok', 'the heartbeat without receipts went through');
    assert.deepEqual(rig.cp.heartbeats.map((h) => [h.payload.receipts.length, h.status]), [[2, 400], [0, 200]]);
    assert.deepEqual(a.outbox.pendingSeqs, [1, 2], 'the receipts stay pending');
    assert.ok(rig.logs.some((l) => l.includes('REJECTED')), rig.logs.join('\n'));

    await a.loop.tick();
    assert.equal(rig.cp.heartbeats.at(-1)?.payload.receipts.length, 0, 'before the retry time: no receipts');

    // The control plane is fixed and the retry time passes: the receipts go and are acked.
    (rig.cp.nodes.get('node-1') as { helperKey: KeyObject }).helperKey = rig.helperKey.publicKey;
    rig.clock.mono += 60_000;
    const later = await a.loop.tick();
    assert.equal(later.outcome.kind, 'ok');
    assert.equal(rig.cp.heartbeats.at(-1)?.payload.receipts.length, 2);
    assert.deepEqual(a.outbox.pendingSeqs, []);
    assert.deepEqual(rig.cp.storedReceipts().map((p) => p.seq), [1, 2]);
  } finally {
    rig.cleanup();
  }
});

test('receipts are relayed, acked and leave the outbox; a receipt not signed by helper.pub is never relayed', async () => {
  const rig = makeRig();
  try {
    const forger = generateKeyPairSync('ed25519');
    rig.receipts = [receipt(rig, 1), receipt({ helperKey: forger }, 2), receipt(rig, 3)];
    const a = await rig.agent();
    await a.loop.tick();
    assert.deepEqual(rig.cp.heartbeats[0]?.payload.receipts.length, 2);
    assert.deepEqual(rig.cp.storedReceipts().map((p) => p.seq), [1, 3]);
    assert.deepEqual(a.outbox.pendingSeqs, []);
  } finally {
    rig.cleanup();
  }
});

test('a malformed 200 answer or a control plane that throws is a backoff, never a crash', async () => {
  const rig = makeRig();
  try {
    rig.cp.script.push({ status: 200, json: { ackedSeqs: 'all' } }, { status: 502, json: undefined });
    const a = await rig.agent();
    const r1 = await a.loop.tick();
    const r2 = await a.loop.tick();
    assert.equal(r1.outcome.kind, 'unavailable');
    assert.equal(r2.outcome.kind, 'unavailable');
    assert.deepEqual([r1.delayMs, r2.delayMs], [1000, 2000]);
    assert.equal((await a.loop.tick()).delayMs, 30_000);
  } finally {
    rig.cleanup();
  }
});

test('the helper being unreachable still sends a heartbeat with the last apps seen', async () => {
  const rig = makeRig();
  try {
    const a = await rig.agent();
    const broken = new HeartbeatLoop({
      ...(a.loop as unknown as { d: ConstructorParameters<typeof HeartbeatLoop>[0] }).d,
      helper: {
        receipts: async () => { throw new StewardError('HELPER_UNREACHABLE', 'no helper'); },
        status: async () => { throw new StewardError('HELPER_UNREACHABLE', 'no helper'); },
        update: async () => { throw new StewardError('HELPER_UNREACHABLE', 'no helper'); },
        rollback: async () => { throw new StewardError('HELPER_UNREACHABLE', 'no helper'); },
        confirm: async () => { throw new StewardError('HELPER_UNREACHABLE', 'no helper'); },
      },
    });
    const r = await broken.tick();
    assert.equal(r.outcome.kind, 'ok');
    assert.deepEqual(rig.cp.heartbeats[0]?.payload.apps, []);
    assert.ok(rig.logs.some((l) => l.includes('helper status unavailable')));
  } finally {
    rig.cleanup();
  }
});

function desired(attemptId: string, app = 'web'): DesiredEntry {
  return { app, version: '2.0.0', attemptId, manifest: { payload: 'e30=', sig: 'AAAA', keyId: '0123456789abcdef' } };
}

test('a desired entry is handed to the helper once, also across a restart', async () => {
  const rig = makeRig();
  try {
    rig.cp.desired = [desired('run1.node-1')];
    let a = await rig.agent();
    await a.loop.tick();
    await a.loop.idle();
    await a.loop.tick();
    await a.loop.idle();
    a = await rig.agent();
    await a.loop.tick();
    await a.loop.idle();
    assert.deepEqual(rig.updates.map((u) => u.attemptId), ['run1.node-1']);
    assert.ok(a.acted.has('run1.node-1'));
  } finally {
    rig.cleanup();
  }
});

test('a helper refusal (HELD) is final for the attempt; an unreachable or recovering helper, one whose unrelayed receipts are full, or one handing over to a new steward version, is asked again', async () => {
  const rig = makeRig();
  try {
    rig.cp.desired = [desired('held-1'), desired('later-1', 'api')];
    const answers: Record<string, string[]> = { 'held-1': ['HELD'], 'later-1': ['HELPER_UNREACHABLE', 'RECOVERING', 'RECEIPTS_UNRELAYED', 'HANDOVER', 'ok'] };
    rig.updateAnswer = async (e) => {
      const next = (answers[e.attemptId] as string[]).shift();
      if (next !== 'ok') throw new StewardError(next as 'HELD', `${next} for ${e.app}`);
      return { attemptId: e.attemptId, app: e.app, accepted: true };
    };
    const a = await rig.agent();
    for (let i = 0; i < 6; i++) {
      await a.loop.tick();
      await a.loop.idle();
    }
    assert.deepEqual(rig.updates.map((u) => u.attemptId), ['held-1', 'later-1', 'later-1', 'later-1', 'later-1', 'later-1']);
    assert.deepEqual(a.acted.all.map((e) => [e.attemptId, e.answer]), [['held-1', 'refused:HELD'], ['later-1', 'accepted']]);
  } finally {
    rig.cleanup();
  }
});

test('a clock jumping back and forward between heartbeats: each sentAt is the clock at sending, a skewed heartbeat changes nothing, and no receipt or seq is lost', async () => {
  const rig = makeRig();
  try {
    rig.receipts = [receipt(rig, 1), receipt(rig, 2)];
    const a = await rig.agent();
    const stamps: Array<[number, string]> = [];
    // Back an hour, forward an hour, then right: only the last is inside the ±5 min window.
    for (const offset of [-3_600_000, 3_600_000, 0]) {
      rig.clock.t = NOW + offset;
      const r = await a.loop.tick();
      stamps.push([offset, r.outcome.kind]);
      if (offset !== 0) assert.deepEqual(a.outbox.pendingSeqs, [1, 2], 'a refused heartbeat acks nothing');
    }
    assert.deepEqual(stamps, [[-3_600_000, 'clock-skew'], [3_600_000, 'clock-skew'], [0, 'ok']]);
    assert.deepEqual(rig.cp.heartbeats.map((h) => h.payload.sentAt - NOW), [-3_600_000, 3_600_000, 0], 'sentAt is read at every send');
    assert.deepEqual(rig.cp.heartbeats.map((h) => h.payload.seq), [1, 2, 3], 'seqs keep rising through the skew');
    assert.deepEqual(rig.cp.storedReceipts().map((p) => p.seq), [1, 2], 'the receipts got through once the clock was right');
    assert.deepEqual(a.outbox.pendingSeqs, []);
  } finally {
    rig.cleanup();
  }
});

test('new desired entries wait a fetch jitter before they reach the helper, and entries acted on wait no more', async () => {
  const rig = makeRig();
  try {
    const events: string[] = [];
    rig.clock.sleep = async (ms: number) => void events.push(`sleep ${ms}`);
    rig.updateAnswer = async (e) => {
      events.push(`update ${e.attemptId}`);
      return { attemptId: e.attemptId, app: e.app, accepted: true };
    };
    rig.cp.desired = [desired('run1.node-1')];
    const a = await rig.agent();
    await a.loop.tick();
    await a.loop.idle();
    // heartbeatSeconds 30, random 0.5: half of min(10 s, 30 s / 4).
    assert.deepEqual(events, ['sleep 3750', 'update run1.node-1']);
    await a.loop.tick();
    await a.loop.idle();
    assert.deepEqual(events, ['sleep 3750', 'update run1.node-1']);
  } finally {
    rig.cleanup();
  }
});
