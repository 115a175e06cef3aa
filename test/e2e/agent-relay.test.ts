import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type TestHost } from '../helpers/host.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { freePort, releaseArgs } from '../fixtures/app-releases.js';

const cp = new FakeControlPlane();
after(() => cp.stop());

const pendingSeqs = (h: TestHost): number[] => {
  try {
    const o = JSON.parse(readFileSync(path.join(h.paths.agentDir, 'outbox.json'), 'utf8'));
    return o.pending.map((e: { payload: string }) => JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8')).seq);
  } catch {
    return [-1];
  }
};

test('the agent relays every receipt of a real helper, the control plane acks them and the outbox empties; while the control plane is down it backs off, then delivers everything', { timeout: 180_000 }, async (t) => {
  const port = await freePort();
  const h = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
  await h.startHelper();
  cp.heartbeatSeconds = 1;
  cp.tokens.add('relay-token-0123456789');
  await cp.listen();
  const enrolled = await agentctl(h, ['enroll', '--control-plane', cp.url, '--token', 'relay-token-0123456789', '--json']);
  assert.equal(enrolled.code, 0, enrolled.stderr);
  const nodeId = enrolled.json.nodeId as string;
  const a = startAgentProcess(h);

  const update = async (version: string) => {
    const r = await agentctl(h, ['update', 'web', version, ...releaseArgs(h.scratch, 'web', version, port, { stableMs: 100 }), '--json']);
    assert.equal(r.code, 0, r.stderr + r.stdout);
  };
  for (const v of ['1.0.0', '1.1.0', '1.2.0']) await update(v);
  await a.waitFor('three receipts stored', () => cp.storedReceipts().length === 3);
  await a.waitFor('the outbox to empty', () => pendingSeqs(h).length === 0);
  assert.deepEqual(cp.storedReceipts().map((r) => [r.seq, r.nodeId, r.targetVersion]), [[1, nodeId, '1.0.0'], [2, nodeId, '1.1.0'], [3, nodeId, '1.2.0']]);
  const last = cp.heartbeats.at(-1)?.payload;
  assert.equal(last?.apps[0]?.name, 'web');
  assert.equal(last?.apps[0]?.current, '1.2.0');

  // The control plane goes away: connections are refused.
  await cp.stop();
  for (const v of ['1.3.0', '1.4.0']) await update(v);
  await a.waitFor('two failed heartbeats', () => (a.stderr().match(/control plane unavailable/g) ?? []).length >= 2);
  await a.waitFor('both new receipts pending', () => pendingSeqs(h).join(',') === '4,5');
  const delays = [...a.stderr().matchAll(/control plane unavailable: .*? failures=(\d+) next try in (\d+) ms/g)].map((m) => [Number(m[1]), Number(m[2])]);
  assert.deepEqual(delays.slice(0, 2).map(([f]) => f), [1, 2]);
  assert.ok((delays[0] as number[])[1]! >= 900 && (delays[0] as number[])[1]! <= 1100, `first backoff ${delays[0]}`);
  assert.ok((delays[1] as number[])[1]! >= 1800 && (delays[1] as number[])[1]! <= 2200, `second backoff ${delays[1]}`);

  await cp.listen();
  await a.waitFor('all five receipts stored', () => cp.storedReceipts().length === 5, 60_000);
  await a.waitFor('the outbox to empty again', () => pendingSeqs(h).length === 0);
  assert.deepEqual(cp.storedReceipts().map((r) => r.seq), [1, 2, 3, 4, 5]);
  const seqs = cp.heartbeats.map((x) => x.payload.seq);
  for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i]! > seqs[i - 1]!, `heartbeat seqs rise: ${seqs.join(',')}`);
  assert.ok(cp.heartbeats.every((x) => x.status === 200));

  assert.equal(await a.stop(), 0, 'SIGTERM stops the agent cleanly');
  assert.match(a.stderr(), /stopping on SIGTERM/);
});
