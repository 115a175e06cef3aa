// docs/design.md §12 and §16 end to end: a release that fails its start on a host reaches the control
// plane as a signed v2 receipt carrying its last log lines, made fit (control characters replaced),
// shown to operators (`receipts --logs`) and withheld from viewers; an app whose host config says
// `logTail: false` sends a v1 receipt without them.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { agentctl, makeHost, processApp, REPO, startHelper, type HelperProcess, type TestHost } from '../helpers/host.js';
import { killApps } from '../helpers/app-processes.js';
import { startAgentProcess, type AgentProcess } from '../helpers/agent-process.js';
import { controlNodes, controlRuns } from '../helpers/control-read.js';
import { startControlDaemon, type Daemon } from '../helpers/fleet.js';
import { appRelease, freePort } from '../fixtures/app-releases.js';

const CTL = path.join(REPO, 'bin/steward-control.js');
let host: TestHost | undefined;
let helper: HelperProcess | undefined;
let agent: AgentProcess | undefined;
let serve: Daemon | undefined;

after(async () => {
  await agent?.stop();
  await helper?.stop();
  await serve?.kill();
  if (host) killApps(host, ['web', 'api']);
  host?.cleanup();
});

const SAID = 'listening on :8080\nError: cannot open /etc/app/secret.conf \u001b[31mEACCES\u001b[0m\n<script>alert(1)</script>\n';

test('a failed start reaches the control plane with its log lines in a v2 receipt, for operators only; logTail false keeps them on the host', { timeout: 240_000 }, async () => {
  const [webPort, apiPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  host = makeHost({ apps: { web: processApp({ stopTimeoutMs: 1000 }), api: { ...processApp({ stopTimeoutMs: 1000 }), logTail: false } } });
  const h = host;
  const db = path.join(h.scratch, 'control.db');
  const ctl = (...args: string[]) => JSON.parse(execFileSync(process.execPath, [CTL, ...args, '--db', db, '--json'], { encoding: 'utf8' }));
  const keys = ctl('keys', 'create', '--out', path.join(h.scratch, 'keys'));
  for (const app of ['web', 'api']) {
    mkdirSync(path.join(h.paths.trustedKeysDir, app), { recursive: true });
    copyFileSync(keys.publicKeyFile, path.join(h.paths.trustedKeysDir, app, 'release.pub'));
  }
  helper = await startHelper(h);
  const s = await startControlDaemon(db, 0, 1, { args: ['--admin-listen', `127.0.0.1:${adminPort}`] });
  serve = s;
  const { url } = s;
  const enrolled = await agentctl(h, ['enroll', '--control-plane', url, '--token', ctl('token', 'create').token, '--json']);
  assert.equal(enrolled.code, 0, enrolled.stderr + enrolled.stdout);
  agent = startAgentProcess(h);
  const a = agent;
  for (const [app, port] of [['web', webPort], ['api', apiPort]] as const) {
    for (const v of ['1.0.0', '2.0.0']) {
      const file = path.join(h.scratch, `${app}-${v}.tgz`);
      writeFileSync(file, appRelease(app, v, port, v === '1.0.0' ? { stableMs: 100 } : { say: SAID, crash: 1 }));
      ctl('release', 'add', app, v, '--file', file, '--base-url', url, '--key', keys.privateKeyFile);
    }
  }
  // The waits read the store in this process (control-read.ts); what is asserted after, the CLI prints.
  await a.waitFor('the first heartbeat', async () => Boolean((await controlNodes(db))[0]?.lastHeartbeatAt));
  for (const app of ['web', 'api']) {
    for (const v of ['1.0.0', '2.0.0']) {
      ctl('rollout', 'start', app, v, '--bake', '0');
      await a.waitFor(`the rollout of ${app} ${v} to end`, async () => {
        const [run] = await controlRuns(db, app);
        return run !== undefined && run.status !== 'running';
      }, 90_000);
      assert.equal(ctl('rollout', 'status', app).runs[0].status, v === '1.0.0' ? 'succeeded' : 'halted', JSON.stringify(ctl('rollout', 'status', app).runs[0]));
    }
  }
  const failed = (app: string) => ctl('receipts', '--app', app).receipts.find((r: { outcome: string }) => r.outcome === 'rolled-back');
  const web = failed('web');
  assert.ok(web, 'web 2.0.0 was rolled back');
  const payload = JSON.parse(Buffer.from(web.envelope.payload, 'base64').toString('utf8'));
  assert.equal(payload.v, 2, 'the control plane said it takes v2, so the helper signed v2');
  assert.ok(web.logTail.includes('Error: cannot open /etc/app/secret.conf \ufffd[31mEACCES\ufffd[0m\n<script>alert(1)</script>\n'), web.logTail);
  assert.equal(payload.logTail, web.logTail, 'the log lines are the signed ones');
  const api = failed('api');
  assert.ok(api, 'api 2.0.0 was rolled back');
  assert.equal(JSON.parse(Buffer.from(api.envelope.payload, 'base64').toString('utf8')).v, 1);
  assert.equal(api.logTail, null, 'logTail false: no log lines left the host');

  const text = execFileSync(process.execPath, [CTL, 'receipts', '--app', 'web', '--logs', '--db', db], { encoding: 'utf8' });
  assert.match(text, /web 2\.0\.0 rolled-back on n-/);
  assert.ok(text.includes('  Error: cannot open /etc/app/secret.conf \ufffd[31mEACCES\ufffd[0m'), text);
  assert.doesNotMatch(text, /\u001b/, 'no terminal escape reaches the operator\'s terminal');
  assert.match(text, /\n\nweb 2\.0\.0 rolled-back on n-\S+ \(attempt /, 'each log under a line of its own, after a blank one');

  const viewer = execFileSync(process.execPath, [CTL, 'operator', 'add', 'vera', '--role', 'viewer', '--db', db], { encoding: 'utf8' }).trim();
  const remote = (token: string) =>
    JSON.parse(execFileSync(process.execPath, [CTL, 'receipts', '--app', 'web', '--server', `http://127.0.0.1:${adminPort}`, '--json'], { encoding: 'utf8', env: { ...process.env, STEWARD_CONTROL_TOKEN: token } })).receipts.find((r: { outcome: string }) => r.outcome === 'rolled-back');
  const seen = remote(viewer);
  assert.deepEqual([seen.logTail, seen.logTailWithheld, seen.envelope], [null, true, null], 'a viewer reads everything but log lines');
  const op = execFileSync(process.execPath, [CTL, 'operator', 'add', 'olga', '--role', 'operator', '--db', db], { encoding: 'utf8' }).trim();
  assert.equal(remote(op).logTail, web.logTail);
});
