// End to end (docs/design.md §19): a real helper, agent and steward-control; the app's heartbeat v7
// carries its signals (a respawn counted by the helper, the requests and errors the agent scraped
// from the app's own /metrics), and the control plane keeps the latest per node and app.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { agentctl, makeHost, processApp, REPO, startHelper, type HelperProcess, type TestHost } from '../helpers/host.js';
import { appStatus, killApps } from '../helpers/app-processes.js';
import { startAgentProcess, type AgentProcess } from '../helpers/agent-process.js';
import { appRelease, freePort } from '../fixtures/app-releases.js';
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

test("a node's heartbeats carry its app's signals, counted by the helper and scraped by the agent, and the control plane keeps the latest", { timeout: 180_000 }, async () => {
  const port = await freePort();
  host = makeHost({ apps: { web: processApp({ stopTimeoutMs: 1000, restart: { baseMs: 100, capMs: 1000, maxAttempts: 10, healthyMs: 60_000 } }) }, supervisor: { sweepMs: 500, pollMs: 100 } });
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
  const file = path.join(h.scratch, 'web-1.0.0.tgz');
  writeFileSync(file, appRelease('web', '1.0.0', port, { stableMs: 100, metrics: true }));
  ctl('release', 'add', 'web', '1.0.0', '--file', file, '--base-url', url, '--key', keys.privateKeyFile);
  await a.waitFor('the first heartbeat', async () => Boolean((await controlNodes(db))[0]?.lastHeartbeatAt));
  ctl('rollout', 'start', 'web', '1.0.0', '--bake', '0');
  await a.waitFor('the rollout to end', async () => {
    const [run] = await controlRuns(db, 'web');
    return run !== undefined && run.status !== 'running';
  }, 60_000);

  // The activation's probe asked /healthz: the app counted it, and the agent scraped the count.
  const signals = async () => (await controlNodes(db))[0]?.apps.find((x) => x.name === 'web')?.signals;
  await a.waitFor('signals with a scrape', async () => {
    const sig = await signals();
    return Boolean(sig?.scrape?.ok && (sig.requests ?? 0) > 0);
  }, 30_000);
  const first = (await signals())!;
  assert.equal(first.errors, 0);
  assert.equal(first.restarts, 0);
  assert.ok(first.rssBytes > 1024 * 1024, `RSS ${first.rssBytes}`);
  assert.ok(Date.parse(first.since) > 0);

  // A respawn: the next heartbeats say restarts 1, since the same activation.
  process.kill((await appStatus(h, 'web')).supervisor.pid as number, 'SIGKILL');
  await a.waitFor('a heartbeat with the respawn', async () => (await signals())?.restarts === 1, 30_000);
  const later = (await signals())!;
  assert.equal(later.since, first.since);
  // What operators and the analysis read: the node record's apps, through the CLI.
  const node = ctl('nodes').nodes[0];
  assert.equal(node.apps[0].signals.restarts, 1, JSON.stringify(node.apps[0]));
});
