// What the fetch tests (test/platform/http-fetch.test.ts and its neighbours) share: loopback
// http(s) servers that record their requests, a temp folder for the downloads, fetch settings,
// and the check that a failed fetch leaves no file.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { FetchSettings } from '../../src/core/config-schema.js';
import { StewardError } from '../../src/core/errors.js';
import { onTeardown, type TeardownScope } from './host-fixture.js';

export interface TestServer {
  origin: string;
  requests: http.IncomingMessage[];
  // One promise per request, settled when its response closes.
  closed: Promise<void>[];
}

export interface FetchFixture {
  tmp: string;
  // A fresh path in tmp for a download.
  dest(): string;
  // A server on 127.0.0.1 answering with `handler` (https with `tlsFiles`).
  serve(handler: http.RequestListener, tlsFiles?: { key: Buffer; cert: Buffer }): Promise<TestServer>;
}

// A temp folder and the servers a test file starts; `scope`'s teardown (host-fixture.ts) closes
// the servers and removes the folder.
export function useFetchFixture(scope: TeardownScope): FetchFixture {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'steward-fetch-'));
  const closers: Array<() => Promise<void>> = [];
  let n = 0;
  const teardown = async () => {
    await Promise.all(closers.map((close) => close()));
    rmSync(tmp, { recursive: true, force: true });
  };
  onTeardown(scope, teardown);
  return {
    tmp,
    dest: () => path.join(tmp, `download-${n++}.tgz`),
    async serve(handler, tlsFiles) {
      const requests: http.IncomingMessage[] = [];
      const closed: Promise<void>[] = [];
      const listener: http.RequestListener = (req, res) => {
        requests.push(req);
        closed.push(new Promise((resolve) => res.once('close', () => resolve())));
        handler(req, res);
      };
      const server = tlsFiles ? https.createServer(tlsFiles, listener) : http.createServer(listener);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      closers.push(
        () =>
          new Promise<void>((resolve) => {
            server.closeAllConnections();
            server.close(() => resolve());
          }),
      );
      const { port } = server.address() as AddressInfo;
      return { origin: `${tlsFiles ? 'https' : 'http'}://127.0.0.1:${port}`, requests, closed };
    },
  };
}

// Fetch settings with generous limits, but for those `over` sets.
export function fetchSettings(over: Partial<FetchSettings> = {}): FetchSettings {
  return {
    deadlineMs: 10_000,
    minBytesPerSecond: 0,
    minSpeedWindowMs: 30_000,
    maxRedirects: 5,
    diskReserveBytes: 0,
    maxUnsignedBytes: 1 << 30,
    ...over,
  };
}

// Asserts a StewardError with `code` and a message matching `re`, and that destFile is gone.
export async function assertFailsClean(p: Promise<unknown>, code: string, re: RegExp, destFile: string): Promise<StewardError> {
  const err = await p.then(
    () => assert.fail('expected the fetch to fail'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof StewardError, `not a StewardError: ${String(err)}`);
  assert.equal(err.code, code, err.message);
  assert.match(err.message, re);
  assert.equal(existsSync(destFile), false, 'destFile must be removed on failure');
  return err;
}
