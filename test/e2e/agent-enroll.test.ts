import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { enrollPayloadSchema } from '../../src/core/control-api.js';
import { DOMAINS, keyIdOf, openEnvelope, parsePrivateKey, parsePublicKey } from '../../src/platform/keys.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl } from '../helpers/host.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';

const TOKEN = 'enroll-token-0123456789';
let cp: FakeControlPlane;

before(async () => {
  cp = new FakeControlPlane();
  cp.heartbeatSeconds = 15;
  await cp.listen();
});
after(() => cp.stop());

const mode = (p: string) => statSync(p).mode & 0o7777;

test('enrollment writes node.key 0600 in a 0700 agent folder, enrollment.json and state/node.json', async (t) => {
  const h = useHost(t);
  cp.tokens.add(TOKEN);
  const r = await agentctl(h, ['enroll', '--control-plane', cp.url, '--token', TOKEN, '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const nodeId = r.json.nodeId as string;
  assert.ok(cp.nodes.has(nodeId));

  const dir = h.paths.agentDir;
  assert.equal(mode(dir), 0o700);
  assert.equal(mode(path.join(dir, 'node.key')), 0o600);
  const nodeKey = parsePrivateKey(readFileSync(path.join(dir, 'node.key')));
  assert.equal(keyIdOf(nodeKey), r.json.nodeKeyId);
  assert.equal(keyIdOf(nodeKey), keyIdOf(cp.nodes.get(nodeId)!.nodeKey), 'the control plane holds the same node key');

  const enrollment = JSON.parse(readFileSync(path.join(dir, 'enrollment.json'), 'utf8'));
  assert.equal(enrollment.schemaVersion, 1);
  assert.equal(enrollment.nodeId, nodeId);
  assert.equal(new URL(enrollment.controlPlaneUrl).origin, cp.url);
  assert.equal(enrollment.heartbeatSeconds, 15);
  assert.equal(typeof enrollment.enrolledAt, 'number');
  assert.equal(mode(path.join(dir, 'enrollment.json')), 0o600);

  assert.deepEqual(JSON.parse(readFileSync(h.paths.nodeState, 'utf8')), { schemaVersion: 1, nodeId });
  assert.equal(mode(h.paths.nodeState), 0o600);
  assert.equal(r.json.helperKeyId, keyIdOf(parsePublicKey(readFileSync(h.paths.helperPub))), 'the helper key was made as the helper would');
});

test('the enroll envelope verifies with the node public key under steward-enroll-v1 and carries the helper key, signed by the helper key', async (t) => {
  const h = useHost(t);
  cp.tokens.add(TOKEN + 'b');
  const before = cp.enrollBodies.length;
  const r = await agentctl(h, ['enroll', '--control-plane', cp.url, '--token', TOKEN + 'b', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const env = cp.enrollBodies[before] as { payload: string; sig: string; keyId: string };
  const payload = enrollPayloadSchema.parse(JSON.parse(Buffer.from(env.payload, 'base64').toString('utf8')));
  const nodePub = parsePublicKey(payload.nodePublicKey);
  assert.equal(env.keyId, r.json.nodeKeyId);
  assert.equal(openEnvelope(env, DOMAINS.enroll, new Map([[keyIdOf(nodePub), nodePub]])).ok, true);
  assert.equal(openEnvelope(env, DOMAINS.heartbeat, new Map([[keyIdOf(nodePub), nodePub]])).ok, false, 'not valid under another domain');
  assert.equal(payload.token, TOKEN + 'b');
  const helperPub = parsePublicKey(payload.helperPublicKey);
  assert.equal(keyIdOf(helperPub), r.json.helperKeyId);
  // The helper key's proof: its signature over the same payload bytes, under its own domain.
  const proof = { payload: env.payload, sig: (env as { helperSig?: string }).helperSig ?? '', keyId: keyIdOf(helperPub) };
  assert.equal(openEnvelope(proof, DOMAINS.enrollHelper, new Map([[keyIdOf(helperPub), helperPub]])).ok, true, 'helperSig verifies under steward-enroll-helper-v1');
  assert.equal(openEnvelope(proof, DOMAINS.enroll, new Map([[keyIdOf(helperPub), helperPub]])).ok, false);
});

test('labels given with --label go in the signed payload as what the node proposes; none, no labels key; a bad one is a usage error', async (t) => {
  const h = useHost(t);
  cp.tokens.add(TOKEN + 'l');
  const before = cp.enrollBodies.length;
  const r = await agentctl(h, ['enroll', '--control-plane', cp.url, '--token', TOKEN + 'l', '--label', 'env=prod', '--label', 'rack=r12', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const payloadOf = (i: number) => JSON.parse(Buffer.from((cp.enrollBodies[i] as { payload: string }).payload, 'base64').toString('utf8'));
  assert.deepEqual(payloadOf(before).labels, { env: 'prod', rack: 'r12' });
  const plain = useHost(t);
  cp.tokens.add(TOKEN + 'm');
  assert.equal((await agentctl(plain, ['enroll', '--control-plane', cp.url, '--token', TOKEN + 'm', '--json'])).code, 0);
  assert.equal('labels' in payloadOf(before + 1), false);
  for (const bad of ['Env=prod', 'env', 'env=a b', `${'k'.repeat(56)}=v`]) {
    const u = await agentctl(useHost(t), ['enroll', '--control-plane', cp.url, '--token', TOKEN + 'n', '--label', bad, '--json']);
    assert.deepEqual([u.code, u.json?.error?.code], [2, 'USAGE'], bad);
  }
  assert.equal(cp.enrollBodies.length, before + 2, 'a usage error sends nothing');
});

test('a TOKEN_INVALID answer is a clear error and writes nothing', async (t) => {
  const h = useHost(t);
  const r = await agentctl(h, ['enroll', '--control-plane', cp.url, '--token', 'never-issued-token-000']);
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /TOKEN_INVALID/);
  assert.match(r.stderr, /token/);
  assert.equal(existsSync(path.join(h.paths.agentDir, 'node.key')), false);
  assert.equal(existsSync(path.join(h.paths.agentDir, 'enrollment.json')), false);
  assert.equal(existsSync(h.paths.nodeState), false);
});

test('an unreachable control plane is CONTROL_PLANE_UNREACHABLE (exit 5) and writes nothing', async (t) => {
  const h = useHost(t);
  const down = new FakeControlPlane();
  await down.listen();
  const url = down.url;
  await down.stop();
  const r = await agentctl(h, ['enroll', '--control-plane', url, '--token', TOKEN, '--json']);
  assert.equal(r.code, 5, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'CONTROL_PLANE_UNREACHABLE');
  assert.equal(existsSync(path.join(h.paths.agentDir, 'node.key')), false);
  assert.equal(existsSync(h.paths.nodeState), false);
});

test('enrolling an enrolled node is refused (ALREADY_ENROLLED) unless --force, which makes a new key and nodeId', async (t) => {
  const h = useHost(t);
  cp.tokens.add(TOKEN + 'c');
  const first = await agentctl(h, ['enroll', '--control-plane', cp.url, '--token', TOKEN + 'c', '--json']);
  assert.equal(first.code, 0, first.stderr);
  const keyBefore = readFileSync(path.join(h.paths.agentDir, 'node.key'), 'utf8');

  cp.tokens.add(TOKEN + 'd');
  const again = await agentctl(h, ['enroll', '--control-plane', cp.url, '--token', TOKEN + 'd', '--json']);
  assert.equal(again.code, 3, again.stderr + again.stdout);
  assert.equal(again.json.error.code, 'ALREADY_ENROLLED');
  assert.equal(readFileSync(path.join(h.paths.agentDir, 'node.key'), 'utf8'), keyBefore, 'the node key is untouched');
  assert.ok(cp.tokens.has(TOKEN + 'd'), 'the token was not spent');

  const forced = await agentctl(h, ['enroll', '--control-plane', cp.url, '--token', TOKEN + 'd', '--force', '--json']);
  assert.equal(forced.code, 0, forced.stderr);
  assert.notEqual(forced.json.nodeId, first.json.nodeId);
  assert.notEqual(forced.json.nodeKeyId, first.json.nodeKeyId);
  assert.equal(JSON.parse(readFileSync(h.paths.nodeState, 'utf8')).nodeId, forced.json.nodeId);
});

test('plain http to a control plane that is not loopback is refused before any connection', async (t) => {
  const h = useHost(t);
  const r = await agentctl(h, ['enroll', '--control-plane', 'http://cp.example:8080', '--token', TOKEN, '--json']);
  assert.equal(r.code, 2, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'USAGE', 'the URL is the command line\'s mistake');
  assert.match(r.json.error.message, /--control-plane: .*loopback/);
  assert.equal(existsSync(h.paths.agentDir), false);
});
