// The attack: a new steward version goes on trial on an enrolled host, and its probe waits for one
// round trip with the agent (docs/design.md §14, step 3). The agent that runs cannot reach the control
// plane, so it never confirms a heartbeat; meanwhile another process (any member of helper.sock's
// group; here this test's own root process) asks the candidate for status and receipts and sends
// the `agent-confirm` the agent never will. Were any request over helper.sock the round trip, a
// candidate that cannot carry the agent's heartbeats would commit. Only the agent app's running
// process (SO_PEERCRED pid, then its start time and boot) confirming counts: the candidate never
// gets ready, and the old version closes its attempt rolled-back, with a receipt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { StewardError } from '../../src/core/errors.js';
import { callHelper } from '../../src/protocol/client.js';
import { agentctl, makeReleaseKey, manifestFor, processApp } from '../helpers/host.js';
import { appRelease, freePort } from '../fixtures/app-releases.js';
import { cleanedUpAfter, currentOf, exited, makeSelfHost, startLauncher, stewardRelease, waitReady, type SelfHost } from '../helpers/self-host.js';
import { skipUnlessCI } from '../helpers/skip.js';

const IS_ROOT = process.getuid?.() === 0;
const { children, hosts } = cleanedUpAfter();

// How long the candidate waits for the agent: short for a test, far above a status answer.
const AGENT_TIMEOUT_MS = 5000;

test("requests and confirms of another process over helper.sock during a trial are not the agent's round trip: the candidate is reverted, with a receipt", { timeout: 180_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the agent app runs as nobody');
  const h = await makeSelfHost('1.0.0', {
    apps: { steward: { runner: 'self', stableMs: 300, agentTimeoutMs: AGENT_TIMEOUT_MS }, 'steward-agent': processApp() },
    supervisor: { processRunner: 'detached' },
  });
  hosts.push(h);
  const launch = () => {
    const c = startLauncher(h);
    children.push(c);
    return c;
  };
  const first = launch();
  await waitReady(h, first);
  // The agent app: a process that stands for an agent whose heartbeats never reach a control
  // plane (it sends none), so it confirms nothing to any helper.
  const key = makeReleaseKey(h, ['steward-agent']);
  const bytes = appRelease('steward-agent', '1.0.0', await freePort());
  const tgz = path.join(h.scratch, 'steward-agent-1.0.0.tgz');
  writeFileSync(tgz, bytes);
  const manifest = path.join(h.scratch, 'steward-agent-1.0.0.manifest');
  writeFileSync(manifest, JSON.stringify(key.sign(manifestFor('steward-agent', '1.0.0', bytes))));
  const agent = await agentctl(h, ['update', 'steward-agent', '1.0.0', '--file', tgz, '--manifest', manifest, '--json']);
  assert.equal(agent.json?.outcome, 'active', agent.stdout + agent.stderr);
  // Enrolled: the trial waits for the agent.
  mkdirSync(path.dirname(h.paths.nodeState), { recursive: true, mode: 0o700 });
  writeFileSync(h.paths.nodeState, JSON.stringify({ schemaVersion: 1, nodeId: 'node-1' }), { mode: 0o600 });

  // The handover, asked for over helper.sock as a rollout's update is.
  const rel = await stewardRelease(h, '2.0.0', 'good');
  const up = await agentctl(h, ['--socket', h.paths.helperSock, 'update', 'steward', '2.0.0', '--file', rel.tgz, '--manifest', rel.manifest, '--json']);
  assert.equal(up.json?.accepted, true, up.stdout + up.stderr);
  assert.equal(await exited(first), 0, 'the restart the handover asked for ends the old helper');

  const candidate = launch();
  // While the candidate runs: status, receipts and a confirm with a heartbeat as good as a real
  // one's, from a process that is not the agent's, every 100 ms.
  const answers: string[] = [];
  let forging = true;
  const forge = (async () => {
    for (let id = 1; forging; id++) {
      for (const req of [{ op: 'status' }, { op: 'receipts' }, { op: 'agent-confirm', seq: 7, sentAt: Date.now() }]) {
        try {
          await callHelper(h.paths.helperSock, { v: 1, id, ...req } as never);
          answers.push(`${req.op}: ok`);
        } catch (err) {
          answers.push(err instanceof StewardError ? `${req.op}: ${err.code}: ${err.message}` : `${req.op}: ${String(err)}`);
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const ended = await endOf(h, candidate);
  forging = false;
  await forge;
  assert.equal(ended, 'exited', 'the candidate did not get ready');
  assert.ok(answers.includes('status: ok'), `the candidate answered the other process:\n${answers.slice(0, 20).join('\n')}`);
  const confirms = answers.filter((a) => a.startsWith('agent-confirm: '));
  assert.ok(confirms.some((a) => /the confirm came from pid \d+, not from the running steward-agent process \(pid \d+\)/.test(a)), confirms.slice(0, 10).join('\n'));
  assert.ok(confirms.every((a) => !a.endsWith(': ok')), 'no forged confirm was taken');

  const back = launch();
  await waitReady(h, back);
  assert.equal(currentOf(h), null, 'current never moved to the candidate');
  assert.equal(existsSync(path.join(h.paths.selfDir, 'trying')), false);
  const r = await agentctl(h, ['receipts', 'steward', '--json']);
  const receipt = ((r.json?.receipts ?? r.json) as any[]).map((x) => x.payload ?? x).find((p) => p.attemptId === up.json.attemptId);
  assert.deepEqual([receipt?.outcome, receipt?.reason?.code], ['rolled-back', 'REPLACEMENT_UNHEALTHY'], JSON.stringify(receipt));
  const s = await agentctl(h, ['status', 'steward', '--json']);
  assert.deepEqual(s.json.apps[0].quarantined, ['2.0.0']);
  await agentctl(h, ['stop', 'steward-agent']);
  back.kill('SIGTERM');
  await exited(back);
});

// Whether the helper `c` exits (its trial failed) or gets ready (it committed) first.
async function endOf(h: SelfHost, c: ChildProcess): Promise<'exited' | 'ready'> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (c.exitCode !== null || c.signalCode !== null) return 'exited';
    const r = await agentctl(h, ['status', '--json']).catch(() => null);
    if (r?.code === 0 && r.json?.recovering === false && r.json?.pid === c.pid) return 'ready';
    if (Date.now() > deadline) throw new Error('the candidate neither exited nor got ready');
    await new Promise((r) => setTimeout(r, 100));
  }
}
