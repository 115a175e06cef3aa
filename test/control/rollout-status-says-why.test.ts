// What `steward-control rollout status`, `receipts`, `receipts --logs`, the dry runs and `rollout
// list` print for a person: each verdict's reason message (escaped: it is a node's text), not
// only its code; each node by hostname too; the nodes behind the last succeeded run without
// those ahead of it (a newer version), which are listed apart and never asked to go back.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describeRun } from '../../src/control/rollouts/run-status.js';
import { startRun } from '../../src/control/rollouts/start-run.js';
import { FakeClock, FakeNode, startControlInProcess, type Control } from '../helpers/control-harness.js';
import { REPO } from '../helpers/host.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
// As a helper writes it when the app's runtime is missing, with a terminal escape a hostile or
// broken node could add.
const MESSAGE = 'web 1.2.0 never started: Failed to find executable node\x1b[2J';
const SHOWN = 'web 1.2.0 never started: Failed to find executable node\\x1b[2J';

let c: Control;
const n: Record<'a' | 'b' | 'c', FakeNode> = {} as never;

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--db', c.dbFile, ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
    });
  });
}

// host-a, host-b and host-c at web 1.0.0; run #1 takes all three to 1.1.0 and succeeds; then
// host-b goes back to 1.0.0 (behind) and host-c on to 1.2.0 (ahead); run #2 of 1.2.0 with
// host-a as its canary halts: host-a failed it, with MESSAGE and no log lines.
before(async () => {
  // On today's time: the CLI reads the same database on the real clock.
  c = await startControlInProcess({ clock: new FakeClock(Date.now()) });
  for (const k of ['a', 'b', 'c'] as const) {
    n[k] = await new FakeNode(c, `host-${k}`).enroll();
    n[k].setCurrent('web', '1.0.0');
    assert.equal((await n[k].heartbeat()).status, 200);
  }
  await c.addRelease('web', '1.1.0');
  await c.addRelease('web', '1.2.0');
  await startRun(c.store, 'web', '1.1.0', { bakeMs: 0, canaries: 3, batch: '100%' });
  for (const k of ['a', 'b', 'c'] as const) await n[k].answer('active');
  await c.server.tick();
  assert.equal((await c.store.read((tx) => tx.runs.latest('web')))?.status, 'succeeded');
  n.b.setCurrent('web', '1.0.0');
  n.c.setCurrent('web', '1.2.0');
  for (const k of ['b', 'c'] as const) await n[k].heartbeat();
  await startRun(c.store, 'web', '1.2.0', { bakeMs: 0, canary: [n.a.nodeId] });
  await n.a.answer('failed', 'REPLACEMENT_UNHEALTHY', { reason: { code: 'REPLACEMENT_UNHEALTHY', message: MESSAGE }, logFile: '/var/log/steward/web-x.log' });
  await c.server.tick();
  assert.equal((await c.store.read((tx) => tx.runs.latest('web')))?.status, 'halted');
});
after(() => c.close());

test('rollout status prints each failed verdict with its reason message, escaped, and each node with its hostname', async () => {
  const r = await cli('rollout', 'status', 'web');
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stdout.includes(`${n.a.nodeId} (host-a) failed REPLACEMENT_UNHEALTHY: ${SHOWN}`), r.stdout);
  assert.doesNotMatch(r.stdout, /\x1b/, 'no raw escape reaches the terminal');
  assert.match(r.stdout, /NODE\s+HOST\s+STATE/);
  assert.match(r.stdout, new RegExp(`${n.c.nodeId}\\s+host-c\\s+already-current`));
  const json = JSON.parse((await cli('--json', 'rollout', 'status', 'web')).stdout) as { runs: Array<{ nodes: Array<{ nodeId: string; hostname: string; reasonMessage: string | null }> }> };
  const a = json.runs[0]!.nodes.find((x) => x.nodeId === n.a.nodeId)!;
  assert.deepEqual([a.hostname, a.reasonMessage], ['host-a', MESSAGE]);
});

test('behind lists the node at an older version, not the one at a newer version: that one is ahead, apart', async () => {
  const v = await c.store.read(async (tx) => describeRun(tx, (await tx.runs.latest('web'))!));
  assert.deepEqual(v.behind.map((b) => [b.nodeId, b.hostname, b.current]), [[n.b.nodeId, 'host-b', '1.0.0']]);
  assert.deepEqual(v.ahead.map((b) => [b.nodeId, b.hostname, b.current]), [[n.c.nodeId, 'host-c', '1.2.0']]);
  assert.equal(v.counts.behind, 1);
  const r = await cli('rollout', 'status', 'web');
  assert.ok(r.stdout.includes(`behind rollout 1: ${n.b.nodeId} (host-b, at 1.0.0)\n`), r.stdout);
  assert.ok(r.stdout.includes(`ahead of rollout 1 (newer, not asked): ${n.c.nodeId} (host-c, at 1.2.0)\n`), r.stdout);
  // retry --behind asks host-b only, never host-c back down.
  const dry = await cli('rollout', 'retry', 'web', '--behind', '--dry-run');
  assert.equal(dry.code, 0, dry.stderr);
  assert.ok(dry.stdout.includes(`canaries at`) && dry.stdout.includes(`${n.b.nodeId} (host-b)`), dry.stdout);
  assert.ok(!dry.stdout.includes(n.c.nodeId), dry.stdout);
});

test('receipts prints the reason message beside the code, and receipts --logs says why a version that never started did not', async () => {
  const r = await cli('receipts', '--app', 'web');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /REASON\s+ATTEMPT\s+COUNTS\s+MESSAGE/);
  assert.ok(r.stdout.includes(SHOWN), r.stdout);
  assert.doesNotMatch(r.stdout, /\x1b/);
  const logs = await cli('receipts', '--app', 'web', '--logs');
  const block = logs.stdout.slice(logs.stdout.indexOf(`web 1.2.0 failed on ${n.a.nodeId}`));
  assert.ok(block.startsWith('web 1.2.0 failed'), logs.stdout);
  assert.ok(block.includes(`  reason: REPLACEMENT_UNHEALTHY: ${SHOWN}\n  (no log lines in the receipt; on the host: /var/log/steward/web-x.log)`), block);
});

test('a dry run names every node by its hostname beside its id', async () => {
  const r = await cli('rollout', 'start', 'web', '1.2.0', '--dry-run', '--allow-retry-reverted', '--canary', n.a.nodeId);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stdout.includes(`  ${n.c.nodeId} (host-c): already-current (reported) (REPORTED)`), r.stdout);
  assert.match(r.stdout, new RegExp(`canaries at \\S+: ${n.a.nodeId} \\(host-a\\)`));
  assert.match(r.stdout, new RegExp(`batch 1 at \\S+: ${n.b.nodeId} \\(host-b\\)`));
  const json = JSON.parse((await cli('--json', 'rollout', 'start', 'web', '1.2.0', '--dry-run', '--allow-retry-reverted')).stdout) as { nodes: Array<{ nodeId: string; hostname: string }>; hostnames: Record<string, string> };
  assert.deepEqual(json.nodes.map((x) => x.hostname).sort(), ['host-a', 'host-b', 'host-c']);
  assert.equal(json.hostnames[n.b.nodeId], 'host-b');
});

test('rollout list prints every run of the app, newest first, with its status and halt reason', async () => {
  const r = await cli('rollout', 'list', 'web');
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.match(lines[0]!, /^RUN\s+APP\s+VERSION\s+STATUS/);
  assert.match(lines[1]!, /^2\s+web\s+1\.2\.0\s+halted\s.*REPLACEMENT_UNHEALTHY: canary node/);
  assert.match(lines[2]!, /^1\s+web\s+1\.1\.0\s+succeeded\s/);
  assert.equal(lines.length, 3);
  const page = JSON.parse((await cli('--json', 'rollout', 'list')).stdout) as { runs: Array<{ id: number }> };
  assert.deepEqual(page.runs.map((x) => x.id), [2, 1]);
});
