// Heartbeat v7's `signals` (docs/design.md §19, docs/protocol.md) at the control plane's check: a
// good one is accepted as sent; a malformed one rejects the heartbeat with BAD_BODY and a message
// that names the field; `signals` below v7 is refused; an older agent's v6 is untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { HEARTBEAT_VERSIONS } from '../../src/core/heartbeat-schema.js';
import { DOMAINS, keyIdOf, signEnvelope } from '../../src/platform/keys.js';
import { verifyHeartbeat, type KnownNode } from '../../src/control/heartbeat/verify-heartbeat.js';

const NOW = 1_700_000_000_000;
const node = generateKeyPairSync('ed25519');
const known: KnownNode = { nodeId: 'node-a', nodeKey: node.publicKey, helperKey: () => null, lastSeq: 0, storedReceipt: () => null };

const SIGNALS = {
  since: '2023-11-14T22:00:00.000Z',
  restarts: 2,
  livenessFailures: 1,
  watchdogKills: 0,
  oomKills: 0,
  cpuSeconds: 12,
  rssBytes: 52_428_800,
  requests: 1030,
  errors: 25,
  scrape: { ok: true, at: '2023-11-14T22:13:00.000Z' },
};

function payload(v: number, signals: unknown): Record<string, unknown> {
  return {
    v, nodeId: 'node-a', seq: 1, sentAt: NOW, bootId: 'boot-1', agentVersion: '0.1.0',
    apps: [{ name: 'web', current: '1.1.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', pid: 1, attempts: 0, since: NOW }, ...(signals === undefined ? {} : { signals }) }],
    receipts: [],
  };
}

const verify = (p: Record<string, unknown>) => verifyHeartbeat(Buffer.from(JSON.stringify(signEnvelope(DOMAINS.heartbeat, p, node.privateKey))), () => known, () => null, NOW);

test('the control plane lists heartbeat v7, and takes a v7 heartbeat with signals as sent', () => {
  assert.ok((HEARTBEAT_VERSIONS as readonly number[]).includes(7));
  const v = verify(payload(7, SIGNALS));
  assert.ok(v.ok, JSON.stringify(v));
  assert.deepEqual(v.ok && v.heartbeat.apps[0]?.signals, SIGNALS);
  const failed = verify(payload(7, { ...SIGNALS, requests: undefined, errors: undefined, scrape: { ok: false, code: 'METRICS_TIMEOUT', at: SIGNALS.scrape.at } }));
  assert.ok(failed.ok, JSON.stringify(failed));
});

test('an older agent (v6, no signals) keeps working; signals in a v6 heartbeat are refused', () => {
  assert.ok(verify(payload(6, undefined)).ok);
  const v = verify(payload(6, SIGNALS));
  assert.equal(!v.ok && v.code, 'BAD_BODY');
  assert.match(!v.ok ? v.message : '', /signals.*only in heartbeats v7/);
});

test('malformed signals reject the heartbeat with BAD_BODY naming the field', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['a negative count', { ...SIGNALS, restarts: -1 }, /restarts/],
    ['a count beyond its bound', { ...SIGNALS, oomKills: 2_000_000_000 }, /oomKills/],
    ['a since that is no ISO time', { ...SIGNALS, since: 'yesterday' }, /since/],
    ['a missing counter', { ...SIGNALS, watchdogKills: undefined }, /watchdogKills/],
    ['an unknown key', { ...SIGNALS, p99: 3 }, /p99/],
    ['a scrape code that is no code', { ...SIGNALS, scrape: { ok: false, code: 'timeout <script>', at: SIGNALS.scrape.at } }, /code/],
    ['a string where a number goes', { ...SIGNALS, rssBytes: '50MB' }, /rssBytes/],
    ['signals that are not an object', 'lots', /signals/],
  ];
  for (const [name, signals, field] of cases) {
    const v = verify(payload(7, JSON.parse(JSON.stringify(signals))));
    assert.equal(!v.ok && v.code, 'BAD_BODY', name);
    assert.match(!v.ok ? v.message : '', field, name);
  }
});

test('a float in signals, which canonical JSON cannot sign, is refused as the rest of a heartbeat is', () => {
  const p = Buffer.from(JSON.stringify(payload(7, { ...SIGNALS, cpuSeconds: 1.5 })), 'utf8');
  const sig = sign(null, Buffer.concat([Buffer.from(DOMAINS.heartbeat + '\n'), p]), node.privateKey);
  const v = verifyHeartbeat(Buffer.from(JSON.stringify({ payload: p.toString('base64'), sig: sig.toString('base64'), keyId: keyIdOf(node.publicKey) })), () => known, () => null, NOW);
  assert.equal(v.ok, false);
});
