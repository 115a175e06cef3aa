import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyPairKeyObjectResult } from 'node:crypto';
import path from 'node:path';
import { ActedStore } from '../../src/agent/acted-store.js';
import { HeartbeatLoop, type HeartbeatDeps } from '../../src/agent/heartbeat-loop.js';
import type { HelperPort } from '../../src/agent/helper-port.js';
import { Outbox } from '../../src/agent/outbox.js';
import { SeqStore } from '../../src/agent/seq-store.js';
import { fetchTrustBundle, MAX_TRUST_BUNDLE_ANSWER_BYTES, trustReportOf } from '../../src/agent/trust-bundle.js';
import type { TrustBundle } from '../../src/core/control-api.js';
import { StewardError } from '../../src/core/errors.js';
import type { TrustStatus } from '../../src/protocol/answers.js';
import { keyIdOf } from '../../src/platform/keys.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { scratchDir } from '../helpers/scratch.js';
import { envelopeOf } from '../helpers/tuf-host.js';
import { signDirective } from '../../src/platform/trust/directive.js';

const NOW = 1_800_000_000_000;

// node-1's heartbeat loop against `cp`, whose answers list heartbeat v8 and offer `offered()`.
async function trustLoop(o: {
  dir: string;
  cp: FakeControlPlane;
  node: KeyPairKeyObjectResult;
  helperKey: KeyPairKeyObjectResult;
  clock: HeartbeatDeps['clock'];
  helper: HelperPort;
  random: number;
  offered: () => { rootVersion: number; timestampVersion: number };
  fetchBundle: NonNullable<HeartbeatDeps['trust']>['fetchBundle'];
  log: HeartbeatDeps['log'];
}): Promise<HeartbeatLoop> {
  return new HeartbeatLoop({
    clock: o.clock,
    random: () => o.random,
    helper: o.helper,
    controlPlane: {
      post: async (endpoint, body) => {
        const r = o.cp.handle('POST', endpoint, Buffer.from(JSON.stringify(body)));
        return { status: r.status, json: r.status === 200 ? { ...(r.json as object), heartbeatVersions: [1, 2, 3, 4, 5, 6, 7, 8], trust: o.offered() } : r.json };
      },
    },
    seq: await SeqStore.open(path.join(o.dir, 'seq.json')),
    outbox: await Outbox.open(path.join(o.dir, 'outbox.json')),
    acted: await ActedStore.open(path.join(o.dir, 'acted.json')),
    nodeId: 'node-1',
    nodeKey: o.node.privateKey,
    loadHelperKey: async () => o.helperKey.publicKey,
    bootId: 'boot-1',
    agentVersion: '0.1.0',
    heartbeatSeconds: 30,
    trust: { fetchBundle: o.fetchBundle },
    log: o.log,
  });
}

// docs/design.md §21.2, the agent's side: an answer naming newer versions than the helper trusts
// makes the agent fetch the bundle for the helper's root and hand it to the helper, before it
// acts on the desired entries; a refresh that failed is not fetched again at every heartbeat; and
// heartbeats v8 report the helper's trust with the age of its timestamp.
test('the agent fetches the bundle for the root its helper trusts, hands it over, and reports trust in heartbeats v8', async () => {
  const dir = scratchDir('steward-agent-trust-');
  const node = generateKeyPairSync('ed25519');
  const helperKey = generateKeyPairSync('ed25519');
  const cp = new FakeControlPlane();
  cp.now = () => NOW;
  cp.heartbeatSeconds = 30;
  cp.addNode('node-1', node.publicKey, helperKey.publicKey);
  const clock = { t: NOW, mono: 0, now: () => clock.t, monotonic: () => clock.mono, sleep: async () => {} };
  let trust: TrustStatus = { scheme: 'tuf', rootVersion: 1, timestampVersion: 1, timestampSignedAt: NOW - 90_000, timestampExpired: false };
  const handed: TrustBundle[] = [];
  const fetched: number[] = [];
  let refreshFails: false | 'TRUST_ROLLBACK' | 'BUSY' | 'HELPER_UNREACHABLE' | 'RECOVERING' = false;
  const helper: HelperPort = {
    receipts: async () => ({ helperKeyId: keyIdOf(helperKey.publicKey), receipts: [] }),
    status: async () => ({ root: '/', pid: 1, startedAt: NOW, recovering: false, apps: [], trust }),
    update: async () => {
      throw new Error('no update');
    },
    rollback: async () => {
      throw new Error('no rollback');
    },
    confirm: async () => {
      throw new StewardError('FORBIDDEN', 'none waits');
    },
    trustRefresh: async (b) => {
      handed.push(b);
      if (refreshFails) throw new StewardError(refreshFails, refreshFails === 'BUSY' ? 'trust-refresh: at most 4 trust bundles are verified at once' : 'older');
      trust = { ...trust, rootVersion: 2, timestampVersion: 5, timestampSignedAt: NOW - 1000 };
      return { scheme: 'tuf', rootVersion: 2, timestampVersion: 5, timestampSignedAt: NOW - 1000 };
    },
  };
  const offered = { rootVersion: 2, timestampVersion: 5 };
  const logs: string[] = [];
  const loop = await trustLoop({
    dir, cp, node, helperKey, clock, helper, random: 0.5, offered: () => offered,
    fetchBundle: async (root) => {
      fetched.push(root);
      return { v: 1, files: { 'timestamp.json': 'e30=' } };
    },
    log: (fmt: string, ...args: unknown[]) => logs.push([fmt, ...args.map(String)].join(' ')),
  });
  assert.equal((await loop.tick()).outcome.kind, 'ok');
  assert.equal(cp.heartbeats[0]!.payload.trust, undefined, 'v1 before the control plane listed 8');
  assert.deepEqual(fetched, [1], 'the bundle for the root the helper trusts');
  assert.equal(handed.length, 1);
  assert.equal((await loop.tick()).outcome.kind, 'ok');
  assert.deepEqual(cp.heartbeats[1]!.payload.trust, { scheme: 'tuf', rootVersion: 2, timestampVersion: 5, timestampAgeSeconds: 1 });
  assert.deepEqual(fetched, [1], 'nothing newer offered: nothing fetched');

  // A refresh the helper refuses: tried once, not again before five minutes.
  trust = { scheme: 'tuf', rootVersion: 2, timestampVersion: 4 };
  refreshFails = 'TRUST_ROLLBACK';
  await loop.tick();
  await loop.tick();
  assert.deepEqual(fetched, [1, 2]);
  assert.ok(logs.some((l) => l.includes('TRUST_ROLLBACK')), logs.join('\n'));
  clock.mono += 5 * 60_000 + 1;
  await loop.tick();
  assert.deepEqual(fetched, [1, 2, 2]);

  // The helper BUSY (its bound on trust-refresh, docs/design.md §21.3): tried again 15 s later,
  // not five minutes.
  clock.mono += 5 * 60_000 + 1;
  refreshFails = 'BUSY';
  await loop.tick();
  assert.deepEqual(fetched, [1, 2, 2, 2]);
  clock.mono += 14_000;
  await loop.tick();
  assert.deepEqual(fetched, [1, 2, 2, 2], 'not before 15 s');
  clock.mono += 1_001;
  await loop.tick();
  assert.deepEqual(fetched, [1, 2, 2, 2, 2]);
  assert.ok(logs.some((l) => / BUSY trust-refresh: .* 15$/.test(l)), logs.join('\n'));

  // The helper going away and coming back, as a self-update of steward makes it (the handover's
  // restart: unreachable; the new helper on trial: RECOVERING until it commits, up to its
  // agentTimeoutMs): it verified nothing, so the bundle, fetched once, is handed over again at
  // each next heartbeat, never held back five minutes while updates that need it are refused
  // TRUST_UNSIGNED.
  clock.mono += 5 * 60_000 + 1;
  const [f0, h0] = [fetched.length, handed.length];
  for (const code of ['HELPER_UNREACHABLE', 'RECOVERING', 'RECOVERING'] as const) {
    refreshFails = code;
    await loop.tick();
    clock.mono += 30_000;
  }
  refreshFails = false;
  await loop.tick();
  assert.deepEqual([fetched.length - f0, handed.length - h0], [1, 4], 'fetched once, handed over at each heartbeat until the helper verified it');
  assert.deepEqual([trust.rootVersion, trust.timestampVersion], [2, 5]);
  assert.ok(logs.some((l) => /handed over again at the next heartbeat 2 5 RECOVERING/.test(l)), logs.join('\n'));
});

test("the trust report's age is of a valid timestamp only; the bundle is fetched as /v1/wait is authorized, under its own cap", async () => {
  assert.deepEqual(trustReportOf({ scheme: 'keys' }, NOW), { scheme: 'keys' });
  assert.deepEqual(trustReportOf({ scheme: 'tuf', rootVersion: 1, timestampVersion: 3, timestampSignedAt: NOW - 5500, timestampExpired: true }, NOW), { scheme: 'tuf', rootVersion: 1, timestampVersion: 3 });
  const asked: Array<{ endpoint: string; headers: Record<string, string>; maxBytes?: number }> = [];
  const bundle = await fetchTrustBundle(
    {
      get: async (request) => {
        asked.push(request());
        return { status: 200, json: { v: 1, files: { '2.root.json': 'e30=' } } };
      },
      authorization: () => 'Steward-Node x',
    },
    1,
  );
  assert.deepEqual(bundle, { v: 1, files: { '2.root.json': 'e30=' } });
  assert.equal(asked[0]!.endpoint, '/v1/trust/bundle?root=1');
  assert.equal(asked[0]!.headers['Authorization'], 'Steward-Node x');
  assert.equal(asked[0]!.maxBytes, MAX_TRUST_BUNDLE_ANSWER_BYTES);
  await assert.rejects(fetchTrustBundle({ get: async () => ({ status: 404, json: undefined }), authorization: () => 'x' }, 1), (e: unknown) => e instanceof StewardError && e.code === 'CONTROL_PLANE_REFUSED');
  await assert.rejects(fetchTrustBundle({ get: async () => ({ status: 200, json: { v: 1, files: { 'x.json': 'e30=' } } }), authorization: () => 'x' }, 1), (e: unknown) => e instanceof StewardError && e.code === 'TRUST_INVALID');
});

// Slow retrieval (test/security/tuf-slow-retrieval.test.ts end to end): a bundle that takes its
// time holds up no heartbeat; the desired entries of that answer wait for the refresh; a fetch
// that failed goes with them to the helper (trustFetchFailed) while the helper trusts older
// versions than those offered, and no more once a refresh got them.
test('a slow bundle holds up no heartbeat; entries wait for it, and carry why its fetch failed', async () => {
  const dir = scratchDir('steward-agent-trust-slow-');
  const node = generateKeyPairSync('ed25519');
  const helperKey = generateKeyPairSync('ed25519');
  const cp = new FakeControlPlane();
  cp.now = () => NOW;
  cp.addNode('node-1', node.publicKey, helperKey.publicKey);
  const clock = { t: NOW, mono: 0, now: () => clock.t, monotonic: () => clock.mono, sleep: async () => {} };
  let trust: TrustStatus = { scheme: 'tuf', rootVersion: 1, timestampVersion: 1, timestampSignedAt: NOW - 1000, timestampExpired: false };
  const updates: Array<{ attemptId: string; trustFetchFailed: string | undefined }> = [];
  const helper: HelperPort = {
    receipts: async () => ({ helperKeyId: keyIdOf(helperKey.publicKey), receipts: [] }),
    status: async () => ({ root: '/', pid: 1, startedAt: NOW, recovering: false, apps: [], trust }),
    update: async (e, _auth, _mirrors, trustFetchFailed) => {
      updates.push({ attemptId: e.attemptId, trustFetchFailed });
      throw new StewardError('FETCH_FAILED', 'refused');
    },
    rollback: async () => {
      throw new Error('no rollback');
    },
    confirm: async () => {
      throw new StewardError('FORBIDDEN', 'none waits');
    },
    trustRefresh: async () => {
      trust = { ...trust, timestampVersion: 3 };
      return { scheme: 'tuf', rootVersion: 1, timestampVersion: 3, timestampSignedAt: NOW };
    },
  };
  let offered = { rootVersion: 1, timestampVersion: 2 };
  let release: ((r: 'fail' | 'ok') => void) | null = null;
  const director = generateKeyPairSync('ed25519').privateKey;
  const desired = (attemptId: string) => [{ app: 'web', version: '1.0.0', attemptId, manifest: envelopeOf(Buffer.from('{}')), directive: signDirective({ nodeId: 'node-1', app: 'web', version: '1.0.0', attemptId, issuedAt: NOW, notAfter: NOW + 60_000 }, director) }];
  cp.desired = desired('a-1') as typeof cp.desired;
  const loop = await trustLoop({
    dir, cp, node, helperKey, clock, helper, random: 0, offered: () => offered,
    fetchBundle: () =>
      new Promise((resolve, reject) => {
        release = (r) => (r === 'ok' ? resolve({ v: 1, files: { 'timestamp.json': 'e30=' } }) : reject(new StewardError('CONTROL_PLANE_UNREACHABLE', 'no complete answer within 30000 ms')));
      }),
    log: () => {},
  });
  const settle = () => new Promise((r) => setImmediate(r));
  // The fetch hangs: both ticks are answered, the entry is not handed over.
  assert.equal((await loop.tick()).outcome.kind, 'ok');
  assert.equal((await loop.tick()).outcome.kind, 'ok');
  assert.equal(cp.heartbeats.length, 2);
  await settle();
  assert.deepEqual(updates, [], 'the entry waits for the refresh');
  release!('fail');
  await loop.idle();
  assert.deepEqual(updates, [{ attemptId: 'a-1', trustFetchFailed: 'CONTROL_PLANE_UNREACHABLE: no complete answer within 30000 ms' }]);
  // Newer versions offered: fetched at once, and this time got; the next entry carries nothing.
  offered = { rootVersion: 1, timestampVersion: 3 };
  cp.desired = desired('a-2') as typeof cp.desired;
  await loop.tick();
  release!('ok');
  await loop.idle();
  assert.deepEqual(updates.at(-1), { attemptId: 'a-2', trustFetchFailed: undefined });
});
