import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { generateKeyPair } from '../../src/platform/keys.js';
import { useHost, type HostFixture } from '../helpers/host-fixture.js';
import { processApp } from '../helpers/host.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';

// A host whose agent folder holds an enrollment for `url`, made without a control plane.
function enrolledHost(t: TestContext, controlPlane?: Record<string, unknown>, url = 'http://127.0.0.1:9'): HostFixture {
  const h = useHost(t, { apps: { web: processApp() }, ...(controlPlane ? { controlPlane } : {}) });
  const kp = generateKeyPair();
  mkdirSync(h.paths.agentDir, { recursive: true, mode: 0o700 });
  writeFileSync(path.join(h.paths.agentDir, 'node.key'), kp.privatePem, { mode: 0o600 });
  writeFileSync(
    path.join(h.paths.agentDir, 'enrollment.json'),
    JSON.stringify({ schemaVersion: 1, nodeId: 'node-x', controlPlaneUrl: url, enrolledAt: 1, heartbeatSeconds: 1, nodeKeyId: kp.keyId }),
    { mode: 0o600 },
  );
  return h;
}

test('with controlPlane.insecure an http control plane that is not loopback is used, with a warning at start', { timeout: 30_000 }, async (t) => {
  const h = enrolledHost(t, { url: 'http://192.0.2.1:9', insecure: true });
  const a = startAgentProcess(h);
  try {
    await a.waitFor('the warning', () => /WARNING: controlPlane\.insecure is set/.test(a.stderr()));
    await a.waitFor('the started line', () => /started nodeId=node-x controlPlane=http:\/\/192\.0\.2\.1:9/.test(a.stderr()));
  } finally {
    assert.equal(await a.stop(), 0, a.stderr());
  }
});

test('without insecure the agent refuses http to a host that is not loopback, before any connection', { timeout: 30_000 }, async (t) => {
  const h = enrolledHost(t, { url: 'http://192.0.2.1:9' });
  const a = startAgentProcess(h);
  assert.equal(await new Promise((r) => a.child.once('exit', r)), 1);
  assert.match(a.stderr(), /CONFIG_INVALID: plain http to the control plane is allowed only to a loopback host/);
  assert.equal(existsSync(path.join(h.paths.agentDir, 'seq.json')), false, 'no heartbeat was attempted');
});

test('the host config URL wins over the enrolled one', { timeout: 30_000 }, async (t) => {
  const cp = new FakeControlPlane();
  await cp.listen();
  const h = enrolledHost(t, { url: cp.url }, 'http://127.0.0.1:9');
  const a = startAgentProcess(h);
  try {
    await a.waitFor('a heartbeat at the configured control plane', () => cp.heartbeats.length > 0);
    assert.equal(cp.heartbeats[0]?.status, 401, 'this fake does not know node-x');
  } finally {
    await a.stop();
    await cp.stop();
  }
});

test('an agent that is not enrolled exits with NOT_ENROLLED; a second agent for the same root exits with AGENT_LOCKED', { timeout: 30_000 }, async (t) => {
  const bare = useHost(t);
  const lonely = startAgentProcess(bare);
  assert.equal(await new Promise((r) => lonely.child.once('exit', r)), 1);
  assert.match(lonely.stderr(), /NOT_ENROLLED: .*agentctl enroll/);

  const h = enrolledHost(t, { url: 'http://192.0.2.1:9', insecure: true });
  const first = startAgentProcess(h);
  try {
    await first.waitFor('the first agent to start', () => /started nodeId/.test(first.stderr()));
    const second = startAgentProcess(h);
    assert.equal(await new Promise((r) => second.child.once('exit', r)), 1);
    assert.match(second.stderr(), /AGENT_LOCKED: another steward-agent \(pid \d+\) holds/);
  } finally {
    assert.equal(await first.stop(), 0);
  }
});

test('a seq.json from a newer steward is refused, never overwritten', { timeout: 30_000 }, async (t) => {
  const h = enrolledHost(t, { url: 'http://192.0.2.1:9', insecure: true });
  const seqFile = path.join(h.paths.agentDir, 'seq.json');
  writeFileSync(seqFile, JSON.stringify({ schemaVersion: 2, lastSeq: 7 }), { mode: 0o600 });
  const a = startAgentProcess(h);
  assert.equal(await new Promise((r) => a.child.once('exit', r)), 1);
  assert.match(a.stderr(), /STATE_INVALID: .*seq\.json: schemaVersion 2 is newer/);
  assert.deepEqual(JSON.parse(readFileSync(seqFile, 'utf8')), { schemaVersion: 2, lastSeq: 7 });
});

test('SIGTERM aborts a heartbeat that the control plane never answers and stops the agent cleanly', { timeout: 30_000 }, async (t) => {
  const http = await import('node:http');
  let got = 0;
  const server = http.createServer(() => {
    got++; // never answers
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const h = enrolledHost(t, { url: `http://127.0.0.1:${port}` });
  const a = startAgentProcess(h);
  try {
    await a.waitFor('the heartbeat to hang', () => got > 0);
    assert.equal(await a.stop(), 0);
    assert.match(a.stderr(), /the request was aborted \(stopping\)/);
    assert.match(a.stderr(), /stopped/);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test('agentctl enroll takes the agent folder lock: while an agent runs it is refused with AGENT_LOCKED and changes nothing', { timeout: 30_000 }, async (t) => {
  const { agentctl } = await import('../helpers/host.js');
  const cp = new FakeControlPlane();
  await cp.listen();
  cp.tokens.add('locked-token-0123456789');
  const h = enrolledHost(t, { url: cp.url });
  const before = readFileSync(path.join(h.paths.agentDir, 'node.key'), 'utf8');
  const a = startAgentProcess(h);
  try {
    await a.waitFor('the agent to start', () => /started nodeId/.test(a.stderr()));
    const r = await agentctl(h, ['enroll', '--control-plane', cp.url, '--token', 'locked-token-0123456789', '--force', '--json']);
    assert.equal(r.code, 1, r.stderr + r.stdout);
    assert.equal(r.json.error.code, 'AGENT_LOCKED');
    assert.equal(cp.enrollBodies.length, 0, 'nothing was sent');
    assert.equal(readFileSync(path.join(h.paths.agentDir, 'node.key'), 'utf8'), before);
  } finally {
    await a.stop();
    await cp.stop();
  }
});
