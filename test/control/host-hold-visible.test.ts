// The host's own hold as the control plane shows it (docs/design.md §18): an agent's heartbeat v6
// carries who holds an app, why, since and until when; the control plane keeps it with the node's
// app state and shows it in `nodes`, `nodes --json` and the admin API. A heartbeat below v6 says
// `held` alone, and one below v6 that carries the hold is refused (as a control plane from before
// v6 refuses it). On both store backends.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { HEARTBEAT_VERSIONS_HEADER } from '../../src/core/control-api.js';
import { HEARTBEAT_PATH } from '../../src/core/control-api.js';
import { operatorAdd } from '../../src/control/operations/operator-ops.js';
import { runOperation } from '../../src/control/operations/operations.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { adminCall } from '../helpers/admin-client.js';
import { enrollNodes, T0, startControlOn, type AppReport, type Control, type FakeNode } from '../helpers/control-harness.js';
import { REPO } from '../helpers/host.js';
import { describeEachBackend } from '../helpers/store-backends.js';
import http from 'node:http';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
const HOUR = 3_600_000;

function cli(c: Control<ControlStore>, ...args: string[]): Promise<any> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [BIN, '--db', c.dbFile, '--artifacts', path.join(c.dir, 'artifacts'), ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`steward-control ${args.join(' ')}: ${err.message}\n${stdout}${stderr}`));
      resolve(args.includes('--json') ? JSON.parse(stdout) : stdout);
    });
  });
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const webOf = (nodes: Array<{ nodeId: string; apps: Array<{ name: string }> }>, n: FakeNode) => nodes.find((x) => x.nodeId === n.nodeId)?.apps.find((a) => a.name === 'web') as any;
const lineOf = (text: string, n: FakeNode) => text.split('\n').find((l) => l.startsWith(n.nodeId)) ?? '';

// A heartbeat's answer headers when the agent lists the versions it sends.
function heartbeatVersionsOffered(c: Control<ControlStore>, body: string): Promise<{ status: number; versions: number[] }> {
  return new Promise((resolve, reject) => {
    const u = new URL(HEARTBEAT_PATH, c.server.url);
    const req = http.request(u, { method: 'POST', headers: { 'Content-Type': 'application/json', [HEARTBEAT_VERSIONS_HEADER]: '1, 2, 3, 4, 5, 6' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => {
        const answer = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve({ status: res.statusCode ?? 0, versions: answer.heartbeatVersions ?? [] });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

describeEachBackend((backend) => {
  let c: Control<ControlStore> | null = null;
  afterEach(async () => {
    await c?.close();
    c = null;
  });

  test("a heartbeat v6's hold (by, reason, at, until) shows in nodes, nodes --json and the admin API, and goes once the host lifts it", async () => {
    c = await startControlOn(backend, { admin: {} });
    const r = await runOperation({ store: c.store, actor: { operator: 'local:test', role: 'admin', source: null }, artifactsDir: path.join(c.dir, 'artifacts') }, operatorAdd, { name: 'vera', role: 'viewer' });
    const [held, plain] = (await enrollNodes(c, 2)) as [FakeNode, FakeNode];
    const hold = { by: 'alice (uid 1001) over admin.sock', reason: 'change freeze for the audit', at: T0, until: T0 + 4 * HOUR };
    held.apps = [{ name: 'web', current: '1.0.0', held: true, hold } as AppReport];
    const offered = await heartbeatVersionsOffered(c, held.body({ v: 6 }));
    assert.equal(offered.status, 200);
    assert.ok(offered.versions.includes(6), 'the control plane lists heartbeat v6 among those it takes');
    assert.equal((await plain.heartbeat({ v: 6 })).status, 200);

    const json = (await cli(c, 'nodes', '--json')).nodes;
    assert.deepEqual(webOf(json, held).hold, hold);
    assert.equal(webOf(json, held).held, true);
    assert.equal(webOf(json, plain).hold, undefined);
    const human = await cli(c, 'nodes');
    assert.ok(lineOf(human, held).includes(`yes: alice (uid 1001) over admin.sock since ${iso(T0)} (change freeze for the audit), until ${iso(T0 + 4 * HOUR)}`), human);
    assert.match(lineOf(human, plain), / no /);
    const api = await adminCall(c.server.url, '/v1/admin/nodes', { token: r.token });
    assert.equal(api.status, 200);
    assert.deepEqual(webOf(api.body.nodes, held).hold, hold);

    // A hold until release-hold.
    held.apps = [{ name: 'web', current: '1.0.0', held: true, hold: { ...hold, until: null } } as AppReport];
    assert.equal((await held.heartbeat({ v: 6 })).status, 200);
    assert.ok(lineOf(await cli(c, 'nodes'), held).includes('(change freeze for the audit), until release-hold'));
    assert.equal(webOf((await cli(c, 'nodes', '--json')).nodes, held).hold.until, null);

    // The host lifted it: the next heartbeat says so, and the control plane keeps no stale hold.
    held.apps = [{ name: 'web', current: '1.0.0', held: false } as AppReport];
    assert.equal((await held.heartbeat({ v: 6 })).status, 200);
    const after = webOf((await cli(c, 'nodes', '--json')).nodes, held);
    assert.equal(after.held, false);
    assert.equal(after.hold, undefined);
  });

  test('a heartbeat below v6 says held alone (an older agent), and one below v6 that carries a hold is refused', async () => {
    c = await startControlOn(backend);
    const [n] = (await enrollNodes(c, 1)) as [FakeNode];
    n.apps = [{ name: 'web', current: '1.0.0', held: true } as AppReport];
    assert.equal((await n.heartbeat({ v: 5 })).status, 200);
    const web = webOf((await cli(c, 'nodes', '--json')).nodes, n);
    assert.deepEqual([web.held, web.hold], [true, undefined]);
    assert.match(lineOf(await cli(c, 'nodes'), n), / yes /);

    n.apps = [{ name: 'web', current: '1.0.0', held: true, hold: { by: 'root', reason: 'x', at: T0, until: null } } as AppReport];
    const refused = await n.heartbeat({ v: 5 });
    assert.equal(refused.status, 400);
    assert.match(JSON.stringify(refused.body), /`hold` only in heartbeats v6/);
    // Hostile text in a hold is refused whatever the version.
    n.apps = [{ name: 'web', current: '1.0.0', held: true, hold: { by: 'root', reason: 'two\nlines', at: T0, until: null } } as AppReport];
    assert.equal((await n.heartbeat({ v: 6 })).status, 400);
  });
});
