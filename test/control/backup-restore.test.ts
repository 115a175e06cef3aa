// `steward-control backup` and `restore` (docs/design.md §13, "Backups"), with real serve processes on
// each backend and fake nodes with real keys: a backup taken while a rollout runs (serve still
// serving), the control plane lost after the rollout went on, the backup restored onto the same
// backend and onto the other one. Nodes keep their identities and heartbeat on; no seq is
// accepted twice (a node past the restored lastSeq goes on, one below it is answered 409 with
// it and goes on past it); the run that was running is shown stopped with the backup's time;
// the kept tarball is served again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeNode, request } from '../helpers/control-harness.js';
import { addKeptRelease, cliJson, nodesControl, serveControl, type ServedControl } from '../helpers/control-daemon-nodes.js';
import { controlCli, waitUntil } from '../helpers/fleet.js';
import { describeEachBackend, otherBackend, type StoreBackend } from '../helpers/store-backends.js';
import { testBackupKey } from '../helpers/backup-file.js';
import { scratchDir } from '../helpers/scratch.js';

const TARBALL = Buffer.from('the tarball of web 1.1.0, kept by the control plane');

interface BackedUp {
  dir: string;
  backup: string;
  takenAt: number;
  nodes: FakeNode[];
  control: ReturnType<typeof nodesControl>;
  // Each node's seq as the backup holds it, and as the lost control plane last accepted it.
  seqAtBackup: Map<FakeNode, number>;
  seqAtLoss: Map<FakeNode, number>;
  runId: number;
}

async function heartbeatOk(n: FakeNode): Promise<any> {
  const a = await n.heartbeat();
  assert.equal(a.status, 200, JSON.stringify(a.body));
  return a.body;
}

// Two nodes, a release, a rollout whose canary was issued; the backup; then the rollout goes on
// to its end and the nodes heartbeat on, until the control plane is lost (serve stopped).
async function backupDuringRollout(backend: StoreBackend): Promise<BackedUp> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-backup-'));
  const old = await serveControl(await backend.createDatabase(), path.join(dir, 'artifacts'));
  try {
    const control = nodesControl(old);
    await addKeptRelease(old, dir, 'web', '1.1.0', TARBALL);
    const nodes = [await new FakeNode(control, 'host-a').enroll(), await new FakeNode(control, 'host-b').enroll()];
    for (const n of nodes) n.setCurrent('web', '1.0.0');
    for (const n of nodes) for (let i = 0; i < 3; i++) await heartbeatOk(n);
    const run = await cliJson(old, ['rollout', 'start', 'web', '1.1.0', '--canaries', '1', '--batch', '1', '--bake', '0']);
    const desired = new Map<FakeNode, any[]>();
    await waitUntil('the canary to be issued', 10_000, async () => {
      for (const n of nodes) desired.set(n, (await heartbeatOk(n)).desired);
      return [...desired.values()].some((d) => d.length > 0) ? true : undefined;
    });

    const backup = path.join(dir, 'control.backup');
    const made = await old.cli(['backup', '--key', testBackupKey().key, '--out', backup, '--json']);
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stderr, /nodes: 2 rows/, 'progress per table on stderr');
    const seqAtBackup = new Map(nodes.map((n) => [n, n.seq]));

    // The rollout goes on after the backup: the canary confirms, the batch is issued and confirms.
    for (let round = 0; round < 50; round++) {
      const status = (await cliJson(old, ['rollout', 'status', 'web'])).runs[0];
      if (status.status !== 'running') break;
      for (const n of nodes) await n.answer('active');
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal((await cliJson(old, ['rollout', 'status', 'web'])).runs[0].status, 'succeeded');
    for (const n of nodes) await heartbeatOk(n);
    const seqAtLoss = new Map(nodes.map((n) => [n, n.seq]));
    for (const n of nodes) assert.ok(seqAtLoss.get(n)! > seqAtBackup.get(n)!, 'the nodes heartbeated on after the backup');
    return { dir, backup, takenAt: made.json.takenAt, nodes, control, seqAtBackup, seqAtLoss, runId: run.id };
  } finally {
    await old.stop();
  }
}

// Restores the backup onto a fresh target of `target`, serves it, and checks what docs/design.md §13 says.
async function restoreAndHeartbeatOn(b: BackedUp, target: StoreBackend): Promise<void> {
  const db = await target.emptyTarget();
  const artifacts = path.join(scratchDir('steward-restored-'), 'artifacts');
  const restored = await controlCli(db, ['--artifacts', artifacts, 'restore', '--key', testBackupKey().pub, '--from', b.backup, '--json']);
  assert.equal(restored.code, 0, restored.stdout + restored.stderr);
  assert.deepEqual(restored.json.stoppedRuns.map((r: { id: number; app: string }) => [r.id, r.app]), [[b.runId, 'web']]);
  assert.equal(restored.json.tables.nodes, 2);
  assert.equal(restored.json.artifacts, 1);
  assert.match(restored.stderr, /restore: receipts: \d+ rows/);

  let served: ServedControl | null = await serveControl(db, artifacts);
  try {
    const c = served;
    b.control.moveTo(c);
    const [past, below] = b.nodes as [FakeNode, FakeNode];

    // Past the restored lastSeq: accepted as it comes, a seq the lost control plane never saw.
    const next = past.seq + 1;
    await heartbeatOk(past);
    assert.ok(next > b.seqAtLoss.get(past)!);

    // Below it (its seq file went back too): 409 with the restored lastSeq, then past it.
    below.seq = b.seqAtBackup.get(below)! - 2;
    const replayed = await below.heartbeat();
    assert.equal(replayed.status, 409, JSON.stringify(replayed.body));
    assert.equal(replayed.body.error.code, 'SEQ_REPLAYED');
    assert.equal(replayed.body.lastSeq, b.seqAtBackup.get(below));
    below.seq = replayed.body.lastSeq;
    const answer = await heartbeatOk(below);
    assert.deepEqual(answer.desired, [], 'a stopped run issues nothing');

    const nodes = (await cliJson(c, ['nodes'])).nodes as Array<{ nodeId: string; hostname: string }>;
    assert.deepEqual(nodes.map((n) => n.nodeId).sort(), b.nodes.map((n) => n.nodeId).sort(), 'the nodes keep their identities');

    const run = (await cliJson(c, ['rollout', 'status', 'web'])).runs[0];
    assert.equal(run.id, b.runId);
    assert.equal(run.status, 'stopped');
    assert.equal(run.haltReason.code, 'RESTORED');
    assert.ok(run.haltReason.message.includes(new Date(b.takenAt).toISOString()), run.haltReason.message);
    assert.match(run.haltReason.message, /rollout retry web/);

    const tarball = await request(c.url, '/v1/artifacts/web/1.1.0.tgz', 'GET');
    assert.equal(tarball.status, 200);
    assert.deepEqual(tarball.raw, TARBALL, 'the kept tarball came with the backup');

    // An operator retries the stopped run over the node that does not run 1.1.0 now.
    below.setCurrent('web', '1.0.0');
    await heartbeatOk(below);
    const retry = await cliJson(c, ['rollout', 'retry', 'web']);
    assert.notEqual(retry.id, b.runId, 'a new run, never the id of the stopped one');
    const issued = await waitUntil('the retry to issue', 10_000, async () => {
      const d = (await heartbeatOk(below)).desired;
      return d.length > 0 ? d : undefined;
    });
    assert.equal(issued[0].version, '1.1.0');
  } finally {
    await served?.stop();
    served = null;
  }
}

describeEachBackend((backend) => {
  test('a backup taken while a rollout runs restores onto the same backend: nodes heartbeat on, no seq is accepted twice, the run is shown stopped', { timeout: 120_000 }, async () => {
    const b = await backupDuringRollout(backend);
    try {
      await restoreAndHeartbeatOn(b, backend);
      const other = otherBackend(backend);
      if (other) await restoreAndHeartbeatOn(b, other);
    } finally {
      rmSync(b.dir, { recursive: true, force: true });
    }
  });
});
