// A real enrolled steward-agent (with its steward-helper) across a restore of its control plane
// (docs/design.md §13, "Backups"): the backup is taken while the agent heartbeats; the control plane is
// lost a few heartbeats later and restored from that backup on the same address. The agent's
// seq is past the restored lastSeq and it goes on without a word; an agent whose seq.json went
// back below it (as if its host were restored too) is answered 409 and jumps past on its own.
// A seq is never accepted twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { agentFiles } from '../../src/agent/agent-files.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { cliJson, serveControl, type ServedControl } from '../helpers/control-daemon-nodes.js';
import { controlNodes } from '../helpers/control-read.js';
import { controlCli } from '../helpers/fleet.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { testBackupKey } from '../helpers/backup-file.js';

// The node's lastSeq in the store at `c.db`, read in this process (control-read.ts): the waits poll it.
async function lastSeqOf(c: Pick<ServedControl, 'db'>): Promise<number> {
  const [node] = await controlNodes(c.db);
  assert.ok(node, `a node in ${c.db}`);
  return node.lastSeq;
}

test('an enrolled agent heartbeats on through a restore of its control plane from a backup, past the restored lastSeq or by jumping past it after a 409', { timeout: 120_000 }, async (t) => {
  const host = useHost(t, { apps: { web: processApp() } });
  await host.startHelper();
  const artifacts = path.join(host.scratch, 'artifacts');
  const old = await serveControl(path.join(host.scratch, 'control.db'), artifacts);
  let restored: ServedControl | null = null;
  t.after(async () => {
    await old.stop();
    await restored?.stop();
  });
  const port = Number(new URL(old.url).port);
  const { token } = await cliJson(old, ['token', 'create']);
  const enrolled = await agentctl(host, ['enroll', '--control-plane', old.url, '--token', token, '--json']);
  assert.equal(enrolled.code, 0, enrolled.stderr + enrolled.stdout);
  const agent = startAgentProcess(host);
  await agent.waitFor('three heartbeats', async () => (await lastSeqOf(old)) >= 3);

  const backup = path.join(host.scratch, 'control.backup');
  assert.equal((await old.cli(['backup', '--key', testBackupKey().key, '--out', backup])).code, 0);
  // The control plane goes on a few heartbeats after the backup, then is lost.
  const afterBackup = await lastSeqOf(old);
  await agent.waitFor('two more heartbeats', async () => (await lastSeqOf(old)) >= afterBackup + 2);
  await old.stop();
  const lastAccepted = await lastSeqOf(old);

  const db = path.join(host.scratch, 'restored.db');
  const r = await controlCli(db, ['--artifacts', path.join(host.scratch, 'restored-artifacts'), 'restore', '--key', testBackupKey().pub, '--from', backup, '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const restoredSeq = (await cliJson({ cli: (a) => controlCli(db, a) }, ['nodes'])).nodes[0].lastSeq as number;
  assert.ok(restoredSeq < lastAccepted, `the backup is older than the loss (${restoredSeq} < ${lastAccepted})`);
  restored = await serveControl(db, path.join(host.scratch, 'restored-artifacts'), port);
  const c = restored;
  const nodeId = enrolled.json.nodeId;
  assert.equal((await cliJson(c, ['nodes'])).nodes[0].nodeId, nodeId, 'the node keeps its identity');

  // Past the restored lastSeq: the agent's next seqs are above everything the lost control plane
  // accepted, and none is answered 409.
  await agent.waitFor('a heartbeat on the restored control plane', async () => (await lastSeqOf(c)) > lastAccepted, 30_000);
  assert.doesNotMatch(agent.stderr(), /seq replayed/);

  // An agent whose seq.json went back below the restored lastSeq jumps past it on its own.
  await agent.stop();
  const seqFile = agentFiles(host.paths).seq;
  const before = JSON.parse(readFileSync(seqFile, 'utf8'));
  const seen = await lastSeqOf(c);
  writeFileSync(seqFile, JSON.stringify({ ...before, lastSeq: restoredSeq - 2 }));
  const again = startAgentProcess(host);
  try {
    await again.waitFor('a heartbeat past the 409', async () => (await lastSeqOf(c)) > seen, 30_000);
    assert.match(again.stderr(), new RegExp(`heartbeat seq replayed seq=${restoredSeq - 1} lastSeq=${seen}`));
  } finally {
    await again.stop();
  }
});
