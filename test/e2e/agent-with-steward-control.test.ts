import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { agentctl, makeHost, processApp, REPO, startHelper, type HelperProcess, type TestHost } from '../helpers/host.js';
import { killApps } from '../helpers/app-processes.js';
import { startAgentProcess, type AgentProcess } from '../helpers/agent-process.js';
import { appRelease, fetchVersion, freePort } from '../fixtures/app-releases.js';
import { controlNodes, controlRuns } from '../helpers/control-read.js';

const CTL = path.join(REPO, 'bin/steward-control.js');
let host: TestHost | undefined;
let helper: HelperProcess | undefined;
let agent: AgentProcess | undefined;
let serve: ChildProcess | undefined;

after(async () => {
  await agent?.stop();
  await helper?.stop();
  serve?.kill('SIGTERM');
  if (host) killApps(host, ['web']);
  host?.cleanup();
});

test('a node enrolled with the real steward-control heartbeats, converges through two rollouts and its receipts count for them', { timeout: 180_000 }, async () => {
  const port = await freePort();
  host = makeHost({ apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
  const h = host;
  const db = path.join(h.scratch, 'control.db');
  const ctl = (...args: string[]) => JSON.parse(execFileSync(process.execPath, [CTL, ...args, '--db', db, '--json'], { encoding: 'utf8' }));
  const keys = ctl('keys', 'create', '--out', path.join(h.scratch, 'keys'));
  mkdirSync(path.join(h.paths.trustedKeysDir, 'web'), { recursive: true });
  copyFileSync(keys.publicKeyFile, path.join(h.paths.trustedKeysDir, 'web', 'release.pub'));
  helper = await startHelper(h);

  const s = spawn(process.execPath, [CTL, 'serve', '--init', '--db', db, '--listen', '127.0.0.1:0', '--heartbeat-seconds', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  serve = s;
  s.stderr?.resume();
  const url = await new Promise<string>((resolve, reject) => {
    s.once('exit', (code) => reject(new Error(`steward-control serve exited ${code}`)));
    s.stdout?.on('data', (c) => {
      const m = /listening on (\S+)/.exec(String(c));
      if (m) resolve(m[1] as string);
    });
  });

  const { token } = ctl('token', 'create');
  const enrolled = await agentctl(h, ['enroll', '--control-plane', url, '--token', token, '--json']);
  assert.equal(enrolled.code, 0, enrolled.stderr + enrolled.stdout);
  agent = startAgentProcess(h);
  const a = agent;
  for (const v of ['1.0.0', '1.1.0']) {
    const file = path.join(h.scratch, `web-${v}.tgz`);
    writeFileSync(file, appRelease('web', v, port, { stableMs: 100 }));
    ctl('release', 'add', 'web', v, '--file', file, '--base-url', url, '--key', keys.privateKeyFile);
  }
  // The waits read the store in this process (control-read.ts); what is asserted after, the CLI prints.
  await a.waitFor('the first heartbeat', async () => Boolean((await controlNodes(db))[0]?.lastHeartbeatAt));

  for (const v of ['1.0.0', '1.1.0']) {
    ctl('rollout', 'start', 'web', v, '--bake', '0');
    await a.waitFor(`the rollout of ${v} to end`, async () => {
      const [run] = await controlRuns(db, 'web');
      return run !== undefined && run.status !== 'running';
    }, 60_000);
    const run = ctl('rollout', 'status', 'web').runs[0];
    assert.equal(run.status, 'succeeded', JSON.stringify(run));
    assert.deepEqual(run.nodes.map((n: { state: string }) => n.state), ['confirmed']);
    assert.equal(await fetchVersion(port), v);
  }
  const receipts = ctl('receipts').receipts;
  assert.deepEqual(receipts.map((r: { seq: number; outcome: string; counts: boolean }) => [r.seq, r.outcome, r.counts]), [[1, 'active', true], [2, 'active', true]]);
  await a.waitFor('the node to report 1.1.0', async () => (await controlNodes(db))[0]?.apps[0]?.current === '1.1.0');
  const node = ctl('nodes').nodes[0];
  assert.equal(node.nodeId, enrolled.json.nodeId);
  assert.deepEqual(node.receiptLost, []);
  assert.equal(node.apps[0].previous, '1.0.0');
});
