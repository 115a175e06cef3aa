// steward-agent with several control-plane URLs (docs/design.md §13), as a real process against control
// planes on loopback: the next URL after no answer or a 5xx, never after a 4xx, staying on the last
// one that answered, also across a restart; `agentctl enroll --control-plane` repeated.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { generateKeyPair, parsePublicKey } from '../../src/platform/keys.js';
import { freePort } from '../fixtures/app-releases.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { useHost, type HostFixture } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';

const NODE = 'node-x';

// A host enrolled as NODE (with `enrolledUrl`) whose host config lists `urls`, and the node's
// public key for the control planes that should know it.
function enrolledHost(t: TestContext, urls: string[] | null, enrolledUrl = 'http://127.0.0.1:9'): { host: HostFixture; know(cp: FakeControlPlane, lastSeq?: number): void } {
  const host = useHost(t, { apps: { web: processApp() }, ...(urls ? { controlPlane: { url: urls } } : {}) });
  const kp = generateKeyPair();
  mkdirSync(host.paths.agentDir, { recursive: true, mode: 0o700 });
  writeFileSync(path.join(host.paths.agentDir, 'node.key'), kp.privatePem, { mode: 0o600 });
  writeFileSync(
    path.join(host.paths.agentDir, 'enrollment.json'),
    JSON.stringify({ schemaVersion: 1, nodeId: NODE, controlPlaneUrl: enrolledUrl, enrolledAt: 1, heartbeatSeconds: 1, nodeKeyId: kp.keyId }),
    { mode: 0o600 },
  );
  const helperKey = parsePublicKey(generateKeyPair().publicPem);
  return { host, know: (cp, lastSeq = 0) => void cp.addNode(NODE, parsePublicKey(kp.publicPem), helperKey, lastSeq) };
}

async function fake(t: TestContext, port?: number): Promise<FakeControlPlane> {
  const cp = new FakeControlPlane();
  await cp.listen(port);
  t.after(() => cp.stop());
  return cp;
}

// An HTTP server that answers every request with `status`, counting them.
async function answering(t: TestContext, status: number): Promise<{ url: string; hits(): number }> {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'busy' } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits };
}

const accepted = (cp: FakeControlPlane) => cp.heartbeats.filter((h) => h.status === 200).length;
const controlPlaneFile = (h: HostFixture) => JSON.parse(readFileSync(path.join(h.paths.agentDir, 'control-plane.json'), 'utf8'));

test('an agent whose first control plane URL has nothing listening heartbeats through the second, and records it', { timeout: 60_000 }, async (t) => {
  const dead = `http://127.0.0.1:${await freePort()}`;
  const cp = await fake(t);
  const { host, know } = enrolledHost(t, [dead, cp.url]);
  know(cp);
  const a = startAgentProcess(host);
  try {
    await a.waitFor('two accepted heartbeats at the second URL', () => accepted(cp) >= 2);
    assert.match(a.stderr(), /no answer from the control plane: http:\/\/127\.0\.0\.1:\d+\/v1\/heartbeat: .*ECONNREFUSED.*; trying http:\/\/127\.0\.0\.1:\d+\//);
    assert.match(a.stderr(), /heartbeats go to http:\/\/127\.0\.0\.1:\d+\/ \(it answered\)/);
    assert.equal(controlPlaneFile(host).answered.url, `${cp.url}/`);
    assert.equal(a.stderr().match(/no answer from the control plane/g)?.length, 1, 'once over, the dead URL is not tried again');
  } finally {
    assert.equal(await a.stop(), 0);
  }
});

test('an agent whose first URL answers 503 heartbeats through the second', { timeout: 60_000 }, async (t) => {
  const busy = await answering(t, 503);
  const cp = await fake(t);
  const { host, know } = enrolledHost(t, [busy.url, cp.url]);
  know(cp);
  const a = startAgentProcess(host);
  try {
    await a.waitFor('two accepted heartbeats at the second URL', () => accepted(cp) >= 2);
    assert.equal(busy.hits(), 1, 'asked once, then left');
    assert.match(a.stderr(), /no answer from the control plane: http:\/\/127\.0\.0\.1:\d+\/v1\/heartbeat: HTTP 503; trying/);
  } finally {
    assert.equal(await a.stop(), 0);
  }
});

test('an agent whose first URL answers 401 or 409 stays on it: those come from a live control plane', { timeout: 60_000 }, async (t) => {
  const stranger = await fake(t);
  const other = await fake(t);
  const { host, know } = enrolledHost(t, [stranger.url, other.url]);
  know(other);
  const a = startAgentProcess(host);
  try {
    await a.waitFor('two heartbeats refused 401 at the first URL', () => stranger.heartbeats.filter((h) => h.status === 401).length >= 2);
    assert.equal(other.heartbeats.length, 0, 'a 401 is an answer: no failover');
  } finally {
    assert.equal(await a.stop(), 0);
  }

  const ahead = await fake(t);
  const second = await fake(t);
  const h409 = enrolledHost(t, [ahead.url, second.url]);
  h409.know(ahead, 100);
  h409.know(second);
  const b = startAgentProcess(h409.host);
  try {
    await b.waitFor('accepted heartbeats at the first URL after its 409', () => accepted(ahead) >= 2);
    assert.equal(ahead.heartbeats[0]?.status, 409);
    assert.ok((ahead.heartbeats.at(-1)?.payload.seq ?? 0) > 100, 'the agent jumped past the seq the 409 named');
    assert.equal(second.heartbeats.length, 0, 'a 409 is an answer: no failover');
  } finally {
    assert.equal(await b.stop(), 0);
  }
});

test('after failing over the agent stays on the second URL when the first comes back, returns to the first when the second goes down, and restarts on the last that answered', { timeout: 90_000 }, async (t) => {
  const first = await fake(t);
  const second = await fake(t);
  const { host, know } = enrolledHost(t, [first.url, second.url]);
  know(first);
  know(second);
  await first.stop();
  const a = startAgentProcess(host);
  try {
    await a.waitFor('a heartbeat through the second URL', () => accepted(second) >= 1);
    await first.listen();
    const seen = accepted(second);
    await a.waitFor('three more heartbeats through the second URL', () => accepted(second) >= seen + 3);
    assert.equal(first.heartbeats.length, 0, 'the first is back, the agent stays on the second');
    await second.stop();
    await a.waitFor('a heartbeat through the first URL again', () => accepted(first) >= 1);
    // The fake records the heartbeat before its answer reaches the agent, which then writes the file.
    await a.waitFor('control-plane.json naming the first URL', () => controlPlaneFile(host).answered?.url === `${first.url}/`, 10_000);
  } finally {
    assert.equal(await a.stop(), 0);
  }

  // The first answered last: after a restart the agent starts there, though the second is up.
  await second.listen();
  const before = second.heartbeats.length;
  const again = startAgentProcess(host);
  try {
    const had = accepted(first);
    await again.waitFor('two heartbeats through the first URL after the restart', () => accepted(first) >= had + 2);
    assert.equal(second.heartbeats.length, before, 'the restarted agent did not begin with the second URL');
  } finally {
    assert.equal(await again.stop(), 0);
  }
});

test('agentctl enroll with --control-plane repeated enrolls at the first URL that answers and writes the list, which the agent then uses', { timeout: 60_000 }, async (t) => {
  const dead = `http://127.0.0.1:${await freePort()}`;
  const cp = await fake(t);
  cp.tokens.add('list-token-0123456789');
  const host = useHost(t);
  const r = await agentctl(host, ['enroll', '--control-plane', dead, '--control-plane', cp.url, '--token', 'list-token-0123456789', '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.equal(r.json.controlPlaneUrl, `${cp.url}/`);
  assert.deepEqual(r.json.controlPlaneUrls, [`${dead}/`, `${cp.url}/`]);
  const enrollment = JSON.parse(readFileSync(path.join(host.paths.agentDir, 'enrollment.json'), 'utf8'));
  assert.equal(enrollment.controlPlaneUrl, `${cp.url}/`, 'an agent that knows no lists heartbeats to the one that answered');
  const list = controlPlaneFile(host);
  assert.deepEqual([list.schemaVersion, list.urls, list.answered.url], [1, [`${dead}/`, `${cp.url}/`], `${cp.url}/`]);

  const a = startAgentProcess(host);
  try {
    await a.waitFor('an accepted heartbeat', () => accepted(cp) >= 1);
    assert.match(a.stderr(), /control plane URLs \(control-plane\.json\): http:\/\/127\.0\.0\.1:\d+\/ http:\/\/127\.0\.0\.1:\d+\//);
    assert.doesNotMatch(a.stderr(), /ECONNREFUSED/, 'it started on the URL that answered the enrollment');
  } finally {
    assert.equal(await a.stop(), 0);
  }

  const human = useHost(t);
  cp.tokens.add('list-token-human-0123');
  const out = await agentctl(human, ['enroll', '--control-plane', dead, '--control-plane', cp.url, '--token', 'list-token-human-0123']);
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /the agent tries, in order: http:\/\/127\.0\.0\.1:\d+\/ http:\/\/127\.0\.0\.1:\d+\//);
});

test('a bad list of control planes is refused by name: enroll with a usage error, the agent with CONFIG_INVALID', { timeout: 60_000 }, async (t) => {
  const host = useHost(t);
  const nine = Array.from({ length: 9 }, (_, i) => ['--control-plane', `https://cp${i}.example`]).flat();
  const usage: Array<[string[], RegExp]> = [
    [['--control-plane', 'https://a.example', '--control-plane', 'https://a.example/'], /--control-plane: the control plane URL https:\/\/a\.example\/ is listed twice/],
    [nine, /--control-plane: a list of control plane URLs has at most 8 URLs, not 9/],
    [['--control-plane', 'https://a.example', '--control-plane', 'not a url'], /--control-plane: the control plane URL "not a url" is not a valid URL/],
  ];
  for (const [args, message] of usage) {
    const r = await agentctl(host, ['enroll', ...args, '--token', 'tok-0123456789', '--json']);
    assert.deepEqual([r.code, r.json?.error?.code], [2, 'USAGE'], r.stderr + r.stdout);
    assert.match(r.json.error.message, message);
  }
  assert.equal(existsSync(host.paths.agentDir), false, 'nothing was made');

  for (const [url, message] of [
    [[], /controlPlane\.url: a list of control plane URLs needs at least one URL/],
    [['https://a.example', 'nope'], /controlPlane\.url\.1: Invalid URL/],
    [['https://a.example', 'https://a.example'], /controlPlane\.url: the control plane URL https:\/\/a\.example is listed twice/],
  ] as const) {
    const { host: h } = enrolledHost(t, [...url]);
    const a = startAgentProcess(h);
    assert.equal(await new Promise((r) => a.child.once('exit', r)), 1);
    assert.match(a.stderr(), /steward-agent: CONFIG_INVALID: .*steward\.json/);
    assert.match(a.stderr(), message);
  }
});
