// `steward-control copy --from FILE --to postgres://...` (docs/design.md §13): the move of a SQLite
// control plane to PostgreSQL. With real serve processes and fake nodes with real keys: the
// nodes heartbeat on against the PostgreSQL instance with their identities and their seqs (an
// old seq is still a replay there), the rollout that was running goes on from where it was (a
// copy is a move, not a restore), the kept tarball is served; a second copy into the now
// non-empty database is refused and changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeNode, request } from '../helpers/control-harness.js';
import { addKeptRelease, cliJson, nodesControl, serveControl, type ServedControl } from '../helpers/control-daemon-nodes.js';
import { controlCli, waitUntil } from '../helpers/fleet.js';
import { describePostgres } from '../helpers/store-backends.js';

const TARBALL = Buffer.from('the tarball of web 2.0.0');

async function heartbeatOk(n: FakeNode): Promise<any> {
  const a = await n.heartbeat();
  assert.equal(a.status, 200, JSON.stringify(a.body));
  return a.body;
}

describePostgres((backend) => {
  test('a SQLite control plane copied to PostgreSQL: nodes heartbeat on with their identities and seqs, the running rollout goes on, a second copy is refused', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-copy-'));
    const servers: ServedControl[] = [];
    try {
      const file = path.join(dir, 'control.db');
      const sqlite = await serveControl(file, path.join(dir, 'sqlite-artifacts'));
      servers.push(sqlite);
      const control = nodesControl(sqlite);
      await addKeptRelease(sqlite, dir, 'web', '2.0.0', TARBALL);
      const nodes = [await new FakeNode(control, 'host-a').enroll(), await new FakeNode(control, 'host-b').enroll()];
      for (const n of nodes) n.setCurrent('web', '1.0.0');
      for (const n of nodes) for (let i = 0; i < 3; i++) await heartbeatOk(n);
      const run = await cliJson(sqlite, ['rollout', 'start', 'web', '2.0.0', '--canaries', '1', '--batch', '1', '--bake', '0']);
      const canary = await waitUntil('the canary to be issued', 10_000, async () => {
        for (const n of nodes) if ((await heartbeatOk(n)).desired.length > 0) return n;
        return undefined;
      });
      // A copy is a move: serve is stopped first.
      await sqlite.stop();

      const url = await backend.emptyTarget();
      const artifacts = path.join(dir, 'pg-artifacts');
      assert.equal((await controlCli(url, ['copy', '--from', file, '--to', url, '--artifacts', artifacts])).code, 2, 'copy takes --from and --to, not --db');
      const r = await controlCli(null, ['copy', '--from', file, '--from-artifacts', path.join(dir, 'sqlite-artifacts'), '--to', url, '--artifacts', artifacts, '--json']);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.deepEqual(r.json.runningRuns.map((x: { id: number }) => x.id), [run.id]);
      assert.deepEqual(r.json.stoppedRuns, []);
      assert.match(r.stderr, /copy: nodes: 2 rows/);

      const pgServe = await serveControl(url, artifacts);
      servers.push(pgServe);
      control.moveTo(pgServe);
      const listed = (await cliJson(pgServe, ['nodes'])).nodes as Array<{ nodeId: string; lastSeq: number }>;
      assert.deepEqual(listed.map((n) => n.nodeId).sort(), nodes.map((n) => n.nodeId).sort(), 'the nodes keep their identities');
      for (const n of nodes) assert.equal(listed.find((x) => x.nodeId === n.nodeId)?.lastSeq, n.seq, 'and their seqs');

      // The seqs came along: the last one is still a replay on PostgreSQL.
      const replay = nodes[0] as FakeNode;
      const last = replay.seq;
      replay.seq -= 1;
      const again = await replay.heartbeat();
      assert.equal(again.status, 409);
      assert.equal(again.body.lastSeq, last);

      // The run goes on where it was: the canary's receipt for the attempt SQLite issued counts.
      for (let round = 0; round < 50; round++) {
        const status = (await cliJson(pgServe, ['rollout', 'status', 'web'])).runs[0];
        if (status.status !== 'running') break;
        for (const n of [canary, ...nodes.filter((x) => x !== canary)]) await n.answer('active');
        await new Promise((res) => setTimeout(res, 200));
      }
      const done = (await cliJson(pgServe, ['rollout', 'status', 'web'])).runs[0];
      assert.equal(done.id, run.id);
      assert.equal(done.status, 'succeeded', JSON.stringify(done));
      assert.deepEqual(done.nodes.map((n: { state: string }) => n.state), ['confirmed', 'confirmed']);

      const tarball = await request(pgServe.url, '/v1/artifacts/web/2.0.0.tgz', 'GET');
      assert.equal(tarball.status, 200);
      assert.deepEqual(tarball.raw, TARBALL);

      const audit = await cliJson(pgServe, ['audit']);
      const second = await controlCli(null, ['copy', '--from', file, '--from-artifacts', path.join(dir, 'sqlite-artifacts'), '--to', url, '--artifacts', artifacts, '--json']);
      assert.equal(second.code, 3, second.stdout + second.stderr);
      assert.equal(second.json.error.code, 'TARGET_NOT_EMPTY');
      assert.deepEqual(await cliJson(pgServe, ['audit']), audit, 'the refused copy wrote nothing');
    } finally {
      for (const s of servers) await s.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
