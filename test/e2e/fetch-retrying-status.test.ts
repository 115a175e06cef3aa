// docs/design.md §18: while a failed download waits to be tried again, a real helper's `status` (what
// `agentctl status` prints) shows the update in phase `fetch-retrying`; once its fetchUntil has
// passed, the attempt ends with a signed `refused` receipt, FETCH_FAILED, whose message counts
// the tries. And a helper stopped during such a wait exits at once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { callHelper } from '../../src/protocol/client.js';
import { waitUntil } from '../helpers/fleet.js';
import { makeHost, makeReleaseKey, manifestFor, processApp, startHelper, type HelperProcess, type ReleaseKey, type TestHost } from '../helpers/host.js';

let host: TestHost;
let helper: HelperProcess;
let key: ReleaseKey;
let server: http.Server;
let url = '';
let requests = 0;

before(async () => {
  host = makeHost({ apps: { web: processApp() } });
  key = makeReleaseKey(host, ['web']);
  helper = await startHelper(host);
  server = http.createServer((_req, res) => {
    requests++;
    res.writeHead(500).end('down');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/artifacts/web/1.0.0.tgz`;
});
after(async () => {
  await helper?.stop();
  server?.closeAllConnections();
  server?.close();
  host?.cleanup();
});

const manifest = () => key.sign(manifestFor('web', '1.0.0', Buffer.from('any bytes'), { url }));

type Status = { apps: Array<{ name: string; running: { attemptId: string; phase: string } | null }> };
type Receipts = { receipts: Array<{ payload: string }> };

test('an update whose download keeps failing shows fetch-retrying in status, then ends refused FETCH_FAILED counting its tries', async () => {
  const fetchUntil = Date.now() + 4_000;
  // The answer comes once the attempt ended (its code, FETCH_FAILED); status is asked meanwhile.
  const answer = callHelper(host.paths.helperSock, { v: 1, id: 1, op: 'update', app: 'web', version: '1.0.0', manifest: manifest(), by: 'steward-agent', attemptId: 'r1-retrying', fetchUntil }).then(
    () => 'ok',
    (err: { code?: string }) => err.code,
  );
  const running = await waitUntil('the update to wait for its next try', 10_000, async () => {
    const s = (await callHelper(host.paths.helperSock, { v: 1, id: 2, op: 'status', app: 'web' })) as Status;
    const r = s.apps[0]?.running;
    return r?.phase === 'fetch-retrying' ? r : undefined;
  });
  assert.equal(running.attemptId, 'r1-retrying');
  assert.equal(await answer, 'FETCH_FAILED');
  const payload = await waitUntil('the attempt to end', 20_000, async () => {
    const { receipts } = (await callHelper(host.paths.helperSock, { v: 1, id: 3, op: 'receipts', app: 'web' })) as Receipts;
    return receipts.map((r) => JSON.parse(Buffer.from(r.payload, 'base64').toString('utf8'))).find((p) => p.attemptId === 'r1-retrying');
  });
  assert.equal(payload.outcome, 'refused');
  assert.equal(payload.reason.code, 'FETCH_FAILED');
  assert.match(payload.reason.message, /^web 1\.0\.0: \d+ tries from 1 URL over \d+ s failed, and no time is left to try again before .*HTTP 500/);
  assert.ok(requests >= 2, `tried ${requests} times`);
});

test('a helper stopped while a download waits to be tried again exits at once', async () => {
  const answer = callHelper(host.paths.helperSock, { v: 1, id: 4, op: 'update', app: 'web', version: '1.0.0', manifest: manifest(), by: 'steward-agent', attemptId: 'r1-stopping', fetchUntil: Date.now() + 3_600_000 }).catch(() => undefined);
  await waitUntil('the update to wait for its next try', 10_000, async () => {
    const s = (await callHelper(host.paths.helperSock, { v: 1, id: 5, op: 'status', app: 'web' })) as Status;
    return s.apps[0]?.running?.phase === 'fetch-retrying' ? true : undefined;
  });
  const t0 = Date.now();
  await helper.stop();
  assert.ok(Date.now() - t0 < 5_000, `the helper took ${Date.now() - t0} ms to stop`);
  await answer;
});
