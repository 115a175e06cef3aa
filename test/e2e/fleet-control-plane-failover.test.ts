// Several control-plane URLs end to end (docs/design.md §13): a real steward-control behind a dead port and
// a 503 stub. The host enrolls through the list, then, as a host enrolled before lists whose host
// config gains one, heartbeats past both failures and converges a rollout whose tarball comes
// from the signed manifest's URL.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { appRelease, freePort } from '../fixtures/app-releases.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { controlNodes, controlRuns } from '../helpers/control-read.js';
import { controlJson, startControlDaemon, waitUntil, type Daemon } from '../helpers/fleet.js';
import { currentOn, makeFleetHost, removeFleetHost, type FleetHost } from '../helpers/fleet-hosts.js';
import { agentctl, processApp } from '../helpers/host.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-fleet-failover-'));
const db = path.join(dir, 'control.db');
let host: FleetHost | null = null;
let control: (Daemon & { url: string }) | null = null;
let busyHits = 0;
const busy = http.createServer((_req, res) => {
  busyHits++;
  res.writeHead(503, { 'Content-Type': 'application/json' }).end('{"error":{"code":"UNAVAILABLE","message":"draining"}}');
});

after(async () => {
  if (host) await removeFleetHost(host);
  await control?.stop();
  busy.close();
  rmSync(dir, { recursive: true, force: true });
});

const ctl = (...args: string[]): Promise<any> => controlJson(db, args);

test('a host enrolls and heartbeats through a real steward-control listed after a dead URL and a 503, and converges a rollout', { timeout: 180_000 }, async () => {
  control = await startControlDaemon(db, 0, 1);
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
  const busyUrl = `http://127.0.0.1:${(busy.address() as AddressInfo).port}`;
  const dead = `http://127.0.0.1:${await freePort()}`;
  const urls = [dead, busyUrl, control.url];
  const keys = await ctl('keys', 'create', '--out', path.join(dir, 'keys'));
  host = await makeFleetHost('h1', ['web'], keys.publicKeyFile);
  const h = host;

  const { token } = await ctl('token', 'create');
  const enrolled = await agentctl(h.host, ['enroll', ...urls.flatMap((u) => ['--control-plane', u]), '--token', token, '--json']);
  assert.equal(enrolled.code, 0, enrolled.stderr + enrolled.stdout);
  assert.equal(new URL(enrolled.json.controlPlaneUrl).href, new URL(control.url).href, 'the enrollment went to the one that answered');
  assert.equal(busyHits, 1, 'the 503 was asked once');
  h.nodeId = enrolled.json.nodeId;

  // As a host enrolled before lists: no control-plane.json, and a host config that lists all three.
  rmSync(path.join(h.host.paths.agentDir, 'control-plane.json'));
  h.host.writeConfig({ apps: { web: processApp({ stopTimeoutMs: 1000 }) }, controlPlane: { url: urls } });
  h.agent = startAgentProcess(h.host);
  // The waits read the store in this process (control-read.ts); what is asserted after, the CLI prints.
  await waitUntil('the node to heartbeat its apps', 30_000, async () => (((await controlNodes(db))[0]?.apps.length ?? 0) > 0 ? true : undefined));
  assert.equal(busyHits, 2, 'the first heartbeat went past the dead URL and the 503, once each');
  // steward-control records the heartbeat before its answer reaches the agent, which writes the
  // file only then.
  const recorded = (): string | undefined => {
    try {
      return JSON.parse(readFileSync(path.join(h.host.paths.agentDir, 'control-plane.json'), 'utf8')).answered?.url;
    } catch {
      return undefined;
    }
  };
  const answered = await waitUntil('control-plane.json to name the URL that answered', 10_000, async () => recorded());
  assert.equal(answered, new URL(control.url).href);

  const file = path.join(dir, 'web-1.0.0.tgz');
  writeFileSync(file, appRelease('web', '1.0.0', 0, { probe: 'none', stableMs: 300 }));
  await ctl('release', 'add', 'web', '1.0.0', '--file', file, '--base-url', control.url, '--key', keys.privateKeyFile);
  await ctl('rollout', 'start', 'web', '1.0.0', '--bake', '0');
  await waitUntil('the rollout to end', 60_000, async () => {
    const [r] = await controlRuns(db, 'web');
    return r && ['succeeded', 'halted', 'stopped'].includes(r.status) ? true : undefined;
  });
  const run = (await ctl('rollout', 'status', 'web')).runs[0];
  assert.equal(run.status, 'succeeded', JSON.stringify(run, null, 2));
  assert.equal(await currentOn(h, 'web'), '1.0.0');
  assert.equal(busyHits, 2, 'the agent stayed on the URL that answered');
});
