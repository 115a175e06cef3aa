import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { after, test } from 'node:test';
import { busyWaitMs, DEFAULT_BUSY_WAIT_MS, fetchToFile, MAX_BUSY_WAIT_MS } from '../../src/platform/http-fetch.js';
import { assertFailsClean, fetchSettings, useFetchFixture } from '../helpers/fetch-server.js';
import { sri } from '../helpers/host.js';

// docs/design.md §13: a control plane past its --max-downloads answers 503 with Retry-After. The helper's
// fetch waits it out (so a capped download is a later download, not a failed update that would
// count against a rollout's failure budget), within the fetch's one deadline.

const { dest, serve } = useFetchFixture(after);
const body = randomBytes(64 * 1024);

test('a 503 or 429 with Retry-After is waited out and the download then succeeds', async () => {
  for (const status of [503, 429]) {
    let busy = 2;
    const s = await serve((_req, res) => {
      if (busy-- > 0) return void res.writeHead(status, { 'retry-after': '0' }).end('busy');
      res.end(body);
    });
    const destFile = dest();
    const r = await fetchToFile({ url: `${s.origin}/web.tgz`, destFile, maxBytes: body.length, settings: fetchSettings() });
    assert.deepEqual(r, { bytes: body.length, integrity: sri(body) });
    assert.deepEqual(await fsp.readFile(destFile), body);
    assert.equal(s.requests.length, 3, `${status}: two busy answers, then the body`);
  }
});

test('a server that stays busy past the deadline fails the fetch, naming the busy answers, and leaves no file', async () => {
  const s = await serve((_req, res) => res.writeHead(503, { 'retry-after': '1' }).end('busy'));
  const destFile = dest();
  await assertFailsClean(
    fetchToFile({ url: `${s.origin}/web.tgz`, destFile, maxBytes: body.length, settings: fetchSettings({ deadlineMs: 2500 }) }),
    'FETCH_FAILED',
    /answered HTTP 503 \(busy\).*deadline of 2500 ms/,
    destFile,
  );
  assert.ok(s.requests.length >= 2 && s.requests.length <= 3, `waited about 1 s between tries: ${s.requests.length} requests in 2.5 s`);
});

test('other 5xx answers are not waited out', async () => {
  const s = await serve((_req, res) => res.writeHead(500).end('broken'));
  const destFile = dest();
  await assertFailsClean(fetchToFile({ url: `${s.origin}/web.tgz`, destFile, maxBytes: 6, settings: fetchSettings() }), 'FETCH_FAILED', /HTTP 500/, destFile);
  assert.equal(s.requests.length, 1);
});

test('Retry-After is read as seconds or an HTTP date, capped, defaulted, and spread by up to 20 %', () => {
  const mid = () => 0.5;
  assert.equal(busyWaitMs('3', 0, mid), 3000);
  assert.equal(busyWaitMs(undefined, 0, mid), DEFAULT_BUSY_WAIT_MS);
  assert.equal(busyWaitMs('soon', 0, mid), DEFAULT_BUSY_WAIT_MS);
  assert.equal(busyWaitMs('86400', 0, mid), MAX_BUSY_WAIT_MS);
  const now = Date.parse('2026-12-01T00:00:00Z');
  assert.equal(busyWaitMs('Tue, 01 Dec 2026 00:00:07 GMT', now, mid), 7000);
  assert.equal(busyWaitMs('Mon, 30 Nov 2026 00:00:00 GMT', now, mid), 0);
  assert.equal(busyWaitMs('10', 0, () => 0), 9000);
  assert.equal(busyWaitMs('10', 0, () => 1), 11000);
});
