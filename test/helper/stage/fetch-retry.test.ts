// docs/design.md §18, "downloads never halt a fleet on one host's word": the helper tries a failed
// fetch again within the attempt (each source in turn, then a backoff with jitter, until the
// request's fetchUntil or the window's end); an artifact path is fetched from every control plane
// the node knows; and the node's credential goes to control-plane origins only. Staged for real
// from loopback servers that fail as told; the waits run on a clock that sleeps no time.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { versionDir } from '../../../src/core/paths.js';
import { StewardError } from '../../../src/core/errors.js';
import type { Clock } from '../../../src/platform/clock.js';
import { systemClock } from '../../../src/platform/clock.js';
import { artifactSources, authFor } from '../../../src/helper/stage/artifact-sources.js';
import { FETCH_RETRY_BASE_MS, FETCH_RETRY_MAX_MS, fetchBackoffMs, fetchWithRetries } from '../../../src/helper/stage/fetch-retry.js';
import { stageRelease, type StageInput } from '../../../src/helper/stage/stage-release.js';
import type { Progress } from '../../../src/protocol/progress.js';
import { gzipTar, makeReleaseTar } from '../../fixtures/tar-writer.js';
import { makeReleaseKey, manifestFor } from '../../helpers/host.js';
import { hostWithCurrent, type StagedHost } from '../../helpers/stage-harness.js';

const RELEASE = gzipTar(makeReleaseTar('web', '2.0.0', [{ path: 'server.js', content: 'console.log(2)\n' }]));
const AUTH = 'Steward-Node n-0123 99999999999 c2ln';

// What a server does with the n-th request (0 first): fail with a status, cut the body halfway, or serve.
type Answer = 'serve' | 'cut' | number;

interface FakeServer {
  origin: string;
  requests: Array<{ path: string; authorization: string | undefined }>;
}

async function startServer(t: TestContext, answer: (n: number) => Answer): Promise<FakeServer> {
  const requests: FakeServer['requests'] = [];
  const server = http.createServer((req, res) => {
    const n = requests.length;
    requests.push({ path: req.url ?? '', authorization: req.headers.authorization });
    const a = answer(n);
    if (typeof a === 'number') {
      res.writeHead(a, { 'content-type': 'text/plain' });
      res.end('no');
      return;
    }
    res.writeHead(200, { 'content-length': String(RELEASE.length) });
    if (a === 'cut') {
      res.write(RELEASE.subarray(0, RELEASE.length >> 1));
      setTimeout(() => res.destroy(), 20);
      return;
    }
    res.end(RELEASE);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

// An origin nothing listens on: a server started and closed.
async function deadOrigin(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return origin;
}

// The real clock's time, moved on by every sleep, which returns at once; the sleeps it was asked for.
function skippingClock(): Clock & { sleeps: number[] } {
  let ahead = 0;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => systemClock.now() + ahead,
    monotonic: () => systemClock.monotonic() + ahead,
    sleep: async (ms) => {
      sleeps.push(ms);
      ahead += ms;
    },
  };
}

async function withHost(t: TestContext): Promise<StagedHost & { clock: ReturnType<typeof skippingClock>; phases: string[] }> {
  const s = await hostWithCurrent();
  t.after(() => s.host.cleanup());
  const clock = skippingClock();
  return { ...s, deps: { ...s.deps, clock, random: () => 0 }, clock, phases: [] };
}

// Stages web 2.0.0 from a manifest naming `url`, with `extra` request fields; the error or null.
async function stage(s: StagedHost & { phases: string[] }, url: string, extra: Partial<StageInput> = {}): Promise<StewardError | null> {
  const key = makeReleaseKey(s.host, ['web']);
  const manifest = key.sign(manifestFor('web', '2.0.0', RELEASE, { url }));
  try {
    await stageRelease(s.deps, { kind: 'helper', app: 'web', version: '2.0.0', manifest, progress: (p: Progress) => s.phases.push(p.phase), ...extra });
    return null;
  } catch (err) {
    if (err instanceof StewardError) return err;
    throw err;
  }
}

test('the backoff doubles from 2 s up to 60 s, and its jitter takes off at most half', () => {
  assert.equal(fetchBackoffMs(0, () => 0), FETCH_RETRY_BASE_MS);
  assert.equal(fetchBackoffMs(0, () => 1), FETCH_RETRY_BASE_MS / 2);
  assert.equal(fetchBackoffMs(3, () => 0), 8 * FETCH_RETRY_BASE_MS);
  assert.equal(fetchBackoffMs(10, () => 0), FETCH_RETRY_MAX_MS);
  assert.equal(fetchBackoffMs(1000, () => 0.5), FETCH_RETRY_MAX_MS * 0.75);
});

test('a server that fails twice and then serves: the stage succeeds on the third try, after two waits, saying fetch-retrying', async (t) => {
  const s = await withHost(t);
  const server = await startServer(t, (n) => (n === 0 ? 500 : n === 1 ? 404 : 'serve'));
  const err = await stage(s, `${server.origin}/v1/artifacts/web/2.0.0.tgz`, { fetchUntil: s.clock.now() + 10 * 60_000 });
  assert.equal(err, null, err?.message);
  assert.equal(server.requests.length, 3);
  assert.deepEqual(s.clock.sleeps, [FETCH_RETRY_BASE_MS, 2 * FETCH_RETRY_BASE_MS]);
  assert.equal(s.phases.filter((p) => p === 'fetch-retrying').length, 2);
  assert.ok(existsSync(versionDir(s.host.paths, 'web', '2.0.0')), 'staged');
});

test('a download cut halfway is tried again and the extraction starts over clean: the tree is whole', async (t) => {
  const s = await withHost(t);
  const server = await startServer(t, (n) => (n === 0 ? 'cut' : 'serve'));
  const err = await stage(s, `${server.origin}/web.tgz`, { fetchUntil: s.clock.now() + 60_000 });
  assert.equal(err, null, err?.message);
  assert.equal(server.requests.length, 2);
  assert.ok(existsSync(`${versionDir(s.host.paths, 'web', '2.0.0')}/server.js`));
});

test('a request without fetchUntil tries once, as before: FETCH_FAILED at the first failure, no wait', async (t) => {
  const s = await withHost(t);
  const server = await startServer(t, (n) => (n < 1 ? 500 : 'serve'));
  const err = await stage(s, `${server.origin}/web.tgz`);
  assert.equal(err?.code, 'FETCH_FAILED');
  assert.match(err?.message ?? '', /HTTP 500/);
  assert.equal(server.requests.length, 1);
  assert.deepEqual(s.clock.sleeps, []);
});

test('a server that always fails: tries until fetchUntil, then FETCH_FAILED counting every try, nothing staged', async (t) => {
  const s = await withHost(t);
  const server = await startServer(t, () => 500);
  const until = s.clock.now() + 30_000;
  const err = await stage(s, `${server.origin}/web.tgz`, { fetchUntil: until });
  assert.equal(err?.code, 'FETCH_FAILED');
  // Waits of 2, 4, 8 s end before the deadline (14 s in all); the next, 16 s, would pass it.
  assert.deepEqual(s.clock.sleeps, [2_000, 4_000, 8_000]);
  assert.equal(server.requests.length, 4);
  assert.match(err?.message ?? '', /^web 2\.0\.0: 4 tries from 1 URL over \d+ s failed, and no time is left to try again before .*; the last: .*HTTP 500/);
  assert.equal(existsSync(versionDir(s.host.paths, 'web', '2.0.0')), false);
});

test('the window end bounds the retries when it comes before fetchUntil', async (t) => {
  const s = await withHost(t);
  const server = await startServer(t, () => 500);
  const err = await stage(s, `${server.origin}/web.tgz`, { fetchUntil: s.clock.now() + 3_600_000, notAfter: s.clock.now() + 5_000 });
  assert.equal(err?.code, 'FETCH_FAILED');
  assert.deepEqual(s.clock.sleeps, [2_000]);
  assert.equal(server.requests.length, 2);
});

test('an artifact URL on a dead instance is fetched from the next control plane of the list, with the node credential', async (t) => {
  const s = await withHost(t);
  const dead = await deadOrigin();
  const live = await startServer(t, () => 'serve');
  const err = await stage(s, `${dead}/v1/artifacts/web/2.0.0.tgz`, { fetchUntil: s.clock.now() + 60_000, mirrors: [`${dead}/`, `${live.origin}/`], fetchAuth: { origin: dead, authorization: AUTH } });
  assert.equal(err, null, err?.message);
  assert.deepEqual(live.requests, [{ path: '/v1/artifacts/web/2.0.0.tgz', authorization: AUTH }]);
  assert.deepEqual(s.clock.sleeps, [], 'the next source is tried at once, without a wait');
});

test('a manifest url that is an artifact path is resolved against each control plane in turn', async (t) => {
  const s = await withHost(t);
  const failing = await startServer(t, () => 404);
  const live = await startServer(t, () => 'serve');
  const err = await stage(s, '/v1/artifacts/web/2.0.0.tgz', { mirrors: [`${failing.origin}/`, `${live.origin}/steward/`] });
  assert.equal(err, null, err?.message);
  assert.equal(failing.requests.length, 1);
  assert.deepEqual(live.requests.map((r) => r.path), ['/v1/artifacts/web/2.0.0.tgz']);
});

test('a URL that is not a control plane artifact is tried alone, and the credential never leaves the control planes', async (t) => {
  const s = await withHost(t);
  const elsewhere = await startServer(t, (n) => (n === 0 ? 500 : 'serve'));
  const cp = await startServer(t, () => 'serve');
  const err = await stage(s, `${elsewhere.origin}/v1/artifacts/web/2.0.0.tgz`, { fetchUntil: s.clock.now() + 60_000, mirrors: [`${cp.origin}/`], fetchAuth: { origin: cp.origin, authorization: AUTH } });
  assert.equal(err, null, err?.message);
  assert.equal(cp.requests.length, 0, 'an origin that is no control plane is not mirrored by them');
  assert.deepEqual(elsewhere.requests.map((r) => r.authorization), [undefined, undefined]);
});

test('artifactSources and authFor, by table', () => {
  const cps = ['https://a.example/', 'https://b.example:8443/steward/'];
  assert.deepEqual(artifactSources('https://a.example/v1/artifacts/web/1.0.0.tgz', cps), ['https://a.example/v1/artifacts/web/1.0.0.tgz', 'https://b.example:8443/v1/artifacts/web/1.0.0.tgz']);
  assert.deepEqual(artifactSources('https://b.example:8443/v1/artifacts/web/1.0.0.tgz', cps), ['https://b.example:8443/v1/artifacts/web/1.0.0.tgz', 'https://a.example/v1/artifacts/web/1.0.0.tgz']);
  assert.deepEqual(artifactSources('/v1/artifacts/web/1.0.0.tgz', cps), ['https://a.example/v1/artifacts/web/1.0.0.tgz', 'https://b.example:8443/v1/artifacts/web/1.0.0.tgz']);
  assert.deepEqual(artifactSources('/v1/artifacts/web/1.0.0.tgz', []), []);
  assert.deepEqual(artifactSources('/etc/passwd', cps), [], 'a path outside the artifacts is never resolved');
  assert.deepEqual(artifactSources('https://cdn.example/v1/artifacts/web/1.0.0.tgz', cps), ['https://cdn.example/v1/artifacts/web/1.0.0.tgz']);
  assert.deepEqual(artifactSources('https://a.example/releases/web.tgz', cps), ['https://a.example/releases/web.tgz'], 'not an artifact path');
  const auth = { origin: 'https://a.example', authorization: AUTH };
  assert.deepEqual(authFor('https://b.example:8443/v1/artifacts/x/1.tgz', auth, cps), { origin: 'https://b.example:8443', authorization: AUTH });
  assert.equal(authFor('https://cdn.example/v1/artifacts/x/1.tgz', auth, cps), undefined);
  assert.equal(authFor('https://a.example/x', undefined, cps), undefined);
});

test("a helper that stops while a fetch waits to be tried again ends the wait at once with FETCH_FAILED; an error that is not the network's is never tried again", async () => {
  const stopping = new AbortController();
  let calls = 0;
  const clock = {
    now: () => 1_000_000,
    // The wait the helper's stop interrupts: rejects as the real clock does on abort.
    sleep: (_ms: number, signal?: AbortSignal) => {
      stopping.abort();
      return Promise.reject(signal?.reason);
    },
  };
  const failing = async (): Promise<never> => {
    calls++;
    throw new StewardError('FETCH_FAILED', 'connection refused');
  };
  await assert.rejects(fetchWithRetries({ sources: ['http://127.0.0.1:1/a'], until: 2_000_000, clock, random: () => 0, what: 'web 2.0.0', signal: stopping.signal }, failing), (err: StewardError) => {
    assert.equal(err.code, 'FETCH_FAILED');
    assert.match(err.message, /^web 2\.0\.0: the helper stopped while waiting to try the fetch again \(after 1 tries\); the last: connection refused$/);
    return true;
  });
  assert.equal(calls, 1);
  calls = 0;
  const mismatch = async (): Promise<never> => {
    calls++;
    throw new StewardError('INTEGRITY_MISMATCH', 'not the bytes signed');
  };
  await assert.rejects(fetchWithRetries({ sources: ['http://a/', 'http://b/'], until: 2_000_000, clock, random: () => 0, what: 'web 2.0.0' }, mismatch), { code: 'INTEGRITY_MISMATCH' });
  assert.equal(calls, 1, 'a release problem is not the network: no other source, no retry');
});
