import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { fetchToFile } from '../../src/platform/http-fetch.js';
import { assertFailsClean, fetchSettings, useFetchFixture } from '../helpers/fetch-server.js';

// The total deadline, the minimum speed and the caller's signal (transfer-guard.ts), through
// fetchToFile.

const { dest, serve } = useFetchFixture(after);
const body = randomBytes(200 * 1024);

describe('fetchToFile within its deadline, minimum speed and signal', () => {
  test('a server that stalls fails at the total deadline', { timeout: 10_000 }, async () => {
    const s = await serve((_req, res) => res.writeHead(200).write('abc'));
    const destFile = dest();
    const t0 = performance.now();
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: 1000, settings: fetchSettings({ deadlineMs: 300 }) }),
      'FETCH_FAILED',
      /deadline/,
      destFile,
    );
    const ms = performance.now() - t0;
    assert.ok(ms >= 290 && ms < 3000, `took ${ms} ms`);
  });

  test('a server that drips bytes below the minimum speed fails as too slow', { timeout: 10_000 }, async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      const t = setInterval(() => res.write(Buffer.alloc(10, 0x62)), 50);
      res.once('close', () => clearInterval(t));
    });
    const destFile = dest();
    const t0 = performance.now();
    await assertFailsClean(
      fetchToFile({
        url: `${s.origin}/x`,
        destFile,
        maxBytes: 100_000,
        settings: fetchSettings({ minSpeedWindowMs: 300, minBytesPerSecond: 10_000 }),
      }),
      'FETCH_FAILED',
      /too slow/,
      destFile,
    );
    assert.ok(performance.now() - t0 < 3000);
  });

  test('an aborted signal stops a fetch in progress', { timeout: 10_000 }, async () => {
    const s = await serve((_req, res) => res.writeHead(200).write('abc'));
    const destFile = dest();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: 1000, settings: fetchSettings(), signal: ac.signal }),
      'FETCH_FAILED',
      /aborted/,
      destFile,
    );
    await s.closed[0];
  });

  test('a signal aborted before the start sends nothing', async () => {
    const s = await serve((_req, res) => res.end(body));
    const destFile = dest();
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: fetchSettings(), signal: AbortSignal.abort() }),
      'FETCH_FAILED',
      /aborted/,
      destFile,
    );
    assert.equal(s.requests.length, 0);
  });
});
