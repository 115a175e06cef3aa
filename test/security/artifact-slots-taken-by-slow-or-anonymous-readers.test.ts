// Slow or anonymous readers against the artifact download slots (issue 31 item 11: 64
// connections reading 1 KB every 20 s held every slot for 100 s, and a rollout halted). A node
// proves it is enrolled with its node key's signature (Steward-Node), which its agent hands the
// helper; anonymous downloads (helpers from before that) share a few slots of their own; a
// credential that does not hold is 401; and a download slower than the minimum rate is cut,
// freeing its slot.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { describeRun } from '../../src/control/rollouts/run-status.js';
import { startRun } from '../../src/control/rollouts/start-run.js';
import { downloadAuthorization, DOWNLOAD_AUTH_MAX_AHEAD_MS, DOWNLOAD_AUTH_TTL_MS, type FetchAuth } from '../../src/platform/download-auth.js';
import { fetchToFile } from '../../src/platform/http-fetch.js';
import { appRelease } from '../fixtures/app-releases.js';
import { addOperator } from '../helpers/admin-client.js';
import { FakeClock, FakeNode, startControlInProcess, type Control } from '../helpers/control-harness.js';
import { fetchSettings } from '../helpers/fetch-server.js';
import { controlCli, waitUntil } from '../helpers/fleet.js';
import { currentOn, enrollAndStart, makeFleetHost, removeFleetHost, type FleetHost } from '../helpers/fleet-hosts.js';
import { sri } from '../helpers/host.js';

const SIZE = 32 * 1024 * 1024;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'steward-slow-readers-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

// A reader that takes its first chunk and then reads nothing more (a slow loris): resolves with
// its status once the answer began, and `closed` once the server ended the connection.
interface SlowReader {
  status: number;
  closed(): Promise<'cut' | 'ended'>;
  req: http.ClientRequest;
}
function slowReader(url: string, headers: Record<string, string> = {}): Promise<SlowReader> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      // Reads the rest, then says whether the whole answer came or the connection was cut (a
      // paused reader does not read the connection's end either).
      const closed = () =>
        new Promise<'cut' | 'ended'>((done) => {
          res.on('error', () => undefined);
          res.once('close', () => done(res.complete ? 'ended' : 'cut'));
          res.resume();
        });
      if (res.statusCode !== 200) {
        res.resume();
        return resolve({ status: res.statusCode ?? 0, closed, req });
      }
      res.once('data', () => {
        res.pause();
        resolve({ status: 200, closed, req });
      });
    });
    req.on('error', reject);
  });
}

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const json = (res.headers['content-type'] ?? '').startsWith('application/json') ? JSON.parse(body.toString()) : null;
        resolve({ status: res.statusCode ?? 0, body, json });
      });
    });
    req.on('error', reject);
  });
}

async function withArtifact(downloads: Parameters<typeof startControlInProcess>[0] extends infer O ? (O extends { downloads?: infer D } ? D : never) : never, run: (c: Control, url: string, bytes: Buffer, node: FakeNode) => Promise<void>): Promise<void> {
  const c = await startControlInProcess({ downloads });
  const readers: http.ClientRequest[] = [];
  try {
    const bytes = randomBytes(SIZE);
    await c.addRelease('web', '1.0.0', { bytes });
    const node = await new FakeNode(c).enroll();
    await run(c, `${c.server.url}/v1/artifacts/web/1.0.0.tgz`, bytes, node);
  } finally {
    for (const r of readers) r.destroy();
    await c.close();
  }
}

const authOf = (c: Control, node: FakeNode, expiresAt = c.clock.now() + DOWNLOAD_AUTH_TTL_MS): FetchAuth => ({ origin: new URL(c.server.url).origin, authorization: downloadAuthorization(node.nodeId, expiresAt, node.node.privateKey) });

// The helper's own fetch, with the node's credential as the agent hands it over.
async function nodeFetch(url: string, bytes: Buffer, auth: FetchAuth | undefined, deadlineMs: number): Promise<void> {
  const destFile = path.join(scratch, `dl-${randomBytes(4).toString('hex')}`);
  const r = await fetchToFile({ url, destFile, maxBytes: bytes.length, settings: fetchSettings({ deadlineMs }), ...(auth ? { auth } : {}) });
  assert.equal(r.integrity, sri(bytes));
  rmSync(destFile, { force: true });
}

test('sixteen slow anonymous readers hold at most the anonymous slots, and a node\'s download goes through at once', async () => {
  await withArtifact({ maxDownloads: 4, minDownloadRate: null }, async (c, url, bytes, node) => {
    const readers = await Promise.all(Array.from({ length: 16 }, () => slowReader(url)));
    try {
      const statuses = readers.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, ...new Array(15).fill(503)], 'one anonymous slot of four (an eighth, rounded up)');
      // The node is answered at once, not 503; and two downloads of it at once go through the
      // helper's fetch with its credential.
      assert.equal((await get(url, { authorization: authOf(c, node).authorization, range: 'bytes=0-9' })).status, 206);
      await Promise.all([nodeFetch(url, bytes, authOf(c, node), 60_000), nodeFetch(url, bytes, authOf(c, node), 60_000)]);
      // The credential goes only to the control plane's origin: another origin gets none.
      const other = { origin: 'http://127.0.0.2:1', authorization: authOf(c, node).authorization };
      const anonymous = slowReader(url);
      assert.equal((await anonymous).status, 503, 'the anonymous slot is still taken');
      (await anonymous).req.destroy();
      await assert.rejects(nodeFetch(url, bytes, other, 3000), /busy|503/);
    } finally {
      for (const r of readers) r.req.destroy();
    }
  });
});

test('one node holds at most two slots, so a node with a stolen credential cannot take them all either', async () => {
  await withArtifact({ maxDownloads: 8, minDownloadRate: null }, async (c, url, _bytes, node) => {
    const headers = { authorization: authOf(c, node).authorization };
    const readers = await Promise.all(Array.from({ length: 5 }, () => slowReader(url, headers)));
    try {
      assert.deepEqual(readers.map((r) => r.status).sort(), [200, 200, 503, 503, 503]);
      const second = await new FakeNode(c, 'other').enroll();
      assert.equal((await get(url, { authorization: authOf(c, second).authorization, range: 'bytes=0-9' })).status, 206);
    } finally {
      for (const r of readers) r.req.destroy();
    }
  });
});

test('a credential that does not hold is 401, never taken as anonymous; an operator token downloads too', async () => {
  await withArtifact({ maxDownloads: 4, anonymousDownloads: 0, minDownloadRate: null }, async (c, url, bytes, node) => {
    const range = { range: 'bytes=0-9' };
    const other = await new FakeNode(c, 'other').enroll();
    const now = c.clock.now();
    const bad: Array<[string, string]> = [
      ['another node\'s signature', downloadAuthorization(node.nodeId, now + 60_000, other.node.privateKey)],
      ['the helper key, not the node key', downloadAuthorization(node.nodeId, now + 60_000, node.helper.privateKey)],
      ['expired', downloadAuthorization(node.nodeId, now - 1, node.node.privateKey)],
      ['ending too far ahead', downloadAuthorization(node.nodeId, now + DOWNLOAD_AUTH_MAX_AHEAD_MS + 60_000, node.node.privateKey)],
      ['an unknown node', downloadAuthorization('n-000000000000', now + 60_000, node.node.privateKey)],
      ['malformed', `Steward-Node ${node.nodeId} soon abc`],
      ['a wrong operator token', `Bearer so_${'B'.repeat(32)}`],
      ['another scheme', 'Basic dXNlcjpwYXNz'],
    ];
    for (const [what, authorization] of bad) {
      const r = await get(url, { authorization, ...range });
      assert.equal(r.status, 401, what);
      assert.equal(r.json.error.code, 'UNAUTHENTICATED', what);
    }
    // --anonymous-downloads 0: no credential, no download.
    assert.equal((await get(url, range)).status, 401);
    assert.equal((await get(url, { authorization: authOf(c, node).authorization, ...range })).status, 206);
    const token = await addOperator(c.store, 'olga', 'viewer');
    const byOperator = await get(url, { authorization: `Bearer ${token}` });
    assert.equal(byOperator.status, 200);
    assert.equal(sri(byOperator.body), sri(bytes));
  });
});

test('readers slower than the minimum rate are cut and their slots freed, so the node\'s download that waited goes through', async () => {
  await withArtifact({ maxDownloads: 2, anonymousDownloads: 2, minDownloadRate: { bytesPerSecond: 1024 * 1024, windowMs: 500 } }, async (c, url, bytes, node) => {
    const readers = await Promise.all([slowReader(url), slowReader(url)]);
    assert.deepEqual(readers.map((r) => r.status), [200, 200]);
    const started = Date.now();
    // Every slot is taken: the node's fetch is told 503 and waits it out (Retry-After 5 s).
    const fetched = nodeFetch(url, bytes, authOf(c, node), 30_000);
    // Their slots come free: an anonymous request is served again (the node's fetch is still
    // waiting out its Retry-After, holding none).
    await waitUntil('a slot freed by cutting a slow reader', 10_000, async () => ((await get(url, { range: 'bytes=0-0' })).status === 206 ? true : undefined));
    assert.ok(Date.now() - started < 4500, `cut within a few windows of 500 ms (${Date.now() - started} ms)`);
    assert.deepEqual(await Promise.all(readers.map((r) => r.closed())), ['cut', 'cut'], 'the slow readers never got the whole body');
    await fetched;
    // A download faster than the minimum is never cut.
    assert.equal(sri((await get(url)).body), sri(bytes));
  });
});

test('serve refuses a bad --anonymous-downloads, --download-min-rate or --download-rate-window', async () => {
  const dir = mkdtempSync(path.join(scratch, 'flags-'));
  for (const args of [['--anonymous-downloads', 'many'], ['--anonymous-downloads', '-1'], ['--download-min-rate', '1.5'], ['--download-rate-window', '0']]) {
    const r = await controlCli(path.join(dir, 'c.db'), ['serve', '--init', '--listen', '127.0.0.1:0', ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(args[0] as string));
  }
});

// The whole way: a real agent signs the credential and hands it to a real helper with the
// update, whose fetch sends it; the control plane takes no anonymous download at all.
test('a rollout reaches a real host whose downloads must carry its node credential', { timeout: 120_000 }, async () => {
  const clock = new FakeClock(Date.now());
  clock.now = () => Date.now();
  clock.sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
  const c = await startControlInProcess({ clock, heartbeatSeconds: 1, tickMs: 200, downloads: { anonymousDownloads: 0 } });
  let host: FleetHost | null = null;
  try {
    const pub = path.join(c.dir, 'release.pub');
    writeFileSync(pub, c.releaseKey.publicPem);
    host = await makeFleetHost('a', ['web'], pub);
    await enrollAndStart(host, c.server.url, await c.token());
    const file = path.join(c.dir, 'web-1.0.0.tgz');
    writeFileSync(file, appRelease('web', '1.0.0', 0, { probe: 'none', stableMs: 300 }));
    await addRelease(c.store, { app: 'web', version: '1.0.0', file, url: null, baseUrl: c.server.url, privateKeyPem: c.releaseKey.privatePem, expiresDays: 30, artifactsDir: artifactsDirOf(c.dbFile) });
    assert.equal((await get(`${c.server.url}/v1/artifacts/web/1.0.0.tgz`)).status, 401, 'no anonymous download here');
    await waitUntil('the node to report web', 30_000, async () => ((await c.store.read((tx) => tx.nodes.list())).every((n) => n.apps.length > 0) ? true : undefined));
    await startRun(c.store, 'web', '1.0.0', { bakeMs: 0, batch: '1' });
    const v = await waitUntil('the node to confirm', 60_000, async () => {
      const x = await c.store.read(async (tx) => describeRun(tx, (await tx.runs.latest('web'))!));
      return x.counts.confirmed === 1 || x.status === 'halted' ? x : undefined;
    });
    assert.equal(v.counts.confirmed, 1, JSON.stringify(v.nodes));
    assert.equal(await currentOn(host, 'web'), '1.0.0');
  } finally {
    if (host) await removeFleetHost(host);
    await c.close();
  }
});
