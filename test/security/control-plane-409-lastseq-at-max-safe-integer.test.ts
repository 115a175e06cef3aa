// A control plane that answers every heartbeat `409 SEQ_REPLAYED` with a lastSeq at the edge of
// the safe integers must not make the agent persist a seq it can no longer increment, send or
// read back (which left it refusing its own seq.json at every start, forever). The agent refuses
// such an answer and says so; and a seq.json an older agent left at that edge is reset, with a
// warning, rather than wedging the agent. Real agent processes, real files, a control plane over
// HTTP.
import { after, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startAgentProcess } from '../helpers/agent-process.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { useHost, type HostFixture } from '../helpers/host-fixture.js';
import { agentctl, type TestHost } from '../helpers/host.js';

const cp = new FakeControlPlane();
after(() => cp.stop());

let tokens = 0;
async function enrolledHost(t: TestContext): Promise<{ host: HostFixture; nodeId: string }> {
  if (!cp.port) {
    cp.heartbeatSeconds = 1;
    await cp.listen();
  }
  const host = useHost(t, { apps: {} });
  const token = `lastseq-token-${++tokens}-0123456789`;
  cp.tokens.add(token);
  const r = await agentctl(host, ['enroll', '--control-plane', cp.url, '--token', token, '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  return { host, nodeId: r.json.nodeId as string };
}

// A seq the agent keeps must leave room for a great many more heartbeats below the safe integers.
const ROOM = 2 ** 32;
const hasRoom = (seq: number) => Number.isSafeInteger(seq) && seq <= Number.MAX_SAFE_INTEGER - ROOM;
const seqFile = (h: TestHost) => path.join(h.paths.agentDir, 'seq.json');
const lastSeqOnDisk = (h: TestHost): number => JSON.parse(readFileSync(seqFile(h), 'utf8')).lastSeq;
const answered = (nodeId: string, status: number) => cp.heartbeats.filter((x) => x.payload.nodeId === nodeId && x.status === status);

test('a 409 with lastSeq = Number.MAX_SAFE_INTEGER is refused and logged, never persisted; the restarted agent heartbeats once the control plane is sane', { timeout: 90_000 }, async (t) => {
  const { host, nodeId } = await enrolledHost(t);
  const node = cp.nodes.get(nodeId)!;
  node.lastSeq = Number.MAX_SAFE_INTEGER;
  const agent = startAgentProcess(host);
  try {
    await agent.waitFor('three heartbeats', () => cp.heartbeats.filter((x) => x.payload.nodeId === nodeId).length >= 3);
    assert.ok(hasRoom(lastSeqOnDisk(host)), `seq.json holds ${lastSeqOnDisk(host)}`);
    assert.equal(answered(nodeId, 409).length, cp.heartbeats.filter((x) => x.payload.nodeId === nodeId).length, 'each was answered 409, none adopted');
    await agent.waitFor('the refusal in the log', () => /lastSeq=9007199254740991 is above/.test(agent.stderr()));
    assert.ok(cp.heartbeats.filter((x) => x.payload.nodeId === nodeId).every((x) => hasRoom(x.payload.seq)), 'every heartbeat seq sent has room');
  } finally {
    await agent.stop();
  }

  // The control plane is fixed (it knows seq 40 of this node): a restarted agent starts, jumps
  // past 40 and is answered 200.
  node.lastSeq = 40;
  const again = startAgentProcess(host);
  try {
    await again.waitFor('a 200 heartbeat', () => answered(nodeId, 200).length >= 1);
    assert.ok(answered(nodeId, 200)[0]!.payload.seq > 40);
  } finally {
    await again.stop();
  }
});

test('a seq.json left at Number.MAX_SAFE_INTEGER by an older agent is reset with a warning, and the agent heartbeats again', { timeout: 90_000 }, async (t) => {
  const { host, nodeId } = await enrolledHost(t);
  cp.nodes.get(nodeId)!.lastSeq = 1000;
  writeFileSync(seqFile(host), JSON.stringify({ schemaVersion: 1, lastSeq: Number.MAX_SAFE_INTEGER }), { mode: 0o600 });
  const agent = startAgentProcess(host);
  try {
    await agent.waitFor('a 200 heartbeat', () => answered(nodeId, 200).length >= 1);
    assert.match(agent.stderr(), /WARNING: .*seq\.json holds lastSeq=9007199254740991, above \d+.*starting again from 0/);
    assert.equal(answered(nodeId, 200)[0]!.payload.seq, 1001, 'the control plane named the seq to jump past');
    assert.ok(hasRoom(lastSeqOnDisk(host)));
  } finally {
    await agent.stop();
  }
});
