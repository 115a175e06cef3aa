import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { StewardError } from '../../src/core/errors.js';
import { createUploadStream, readRequestLine } from '../../src/protocol/framing.js';

let dir: string;
const cleanups: Array<() => void> = [];
before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'steward-framing-'))));
after(() => {
  for (const c of cleanups) c();
  rmSync(dir, { recursive: true, force: true });
});

// A server whose one connection is handed to `onSocket`; returns a connected client.
async function pair(onSocket: (s: net.Socket) => void): Promise<{ client: net.Socket; close(): void }> {
  const sock = path.join(dir, `${Math.random().toString(36).slice(2)}.sock`);
  const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, onSocket);
  await new Promise<void>((r) => server.listen(sock, r));
  const client = net.createConnection(sock);
  client.on('error', () => {});
  await new Promise((r) => client.once('connect', r));
  const close = () => {
    client.destroy();
    server.close();
  };
  cleanups.push(close);
  server.on('connection', (s) => cleanups.push(() => s.destroy()));
  return { client, close };
}

test('the request line is returned without its newline, and the bytes after it as rest', async () => {
  let got: { line: string; rest: Buffer } | undefined;
  const done = new Promise<void>((resolve) => {
    void pair(async (s) => {
      got = await readRequestLine(s, 1024);
      resolve();
    }).then((p) => {
      p.client.write('{"v":1}\nABC');
      setTimeout(() => p.close(), 200);
    });
  });
  await done;
  assert.equal(got?.line, '{"v":1}');
  assert.equal(got?.rest.toString(), 'ABC');
});

test('a line of exactly maxBytes is accepted and one byte more is refused', async () => {
  for (const [n, ok] of [[100, true], [101, false]] as const) {
    const result = await new Promise<string>((resolve) => {
      void pair((s) => {
        readRequestLine(s, 100).then(
          (r) => resolve(`ok ${r.line.length}`),
          (e: StewardError) => resolve(`${e.code}`),
        );
      }).then((p) => {
        p.client.write('x'.repeat(n) + '\n');
        setTimeout(() => p.close(), 200);
      });
    });
    assert.equal(result, ok ? 'ok 100' : 'BAD_REQUEST');
  }
});

test('10 MB without a newline is refused as soon as the limit passes, having read little more', async () => {
  const readAtRefusal = await new Promise<number>((resolve) => {
    void pair((s) => {
      readRequestLine(s, 64 * 1024).catch(() => resolve(s.bytesRead));
    }).then((p) => {
      p.client.write(Buffer.alloc(10 * 1024 * 1024, 0x61));
      setTimeout(() => p.close(), 500);
    });
  });
  assert.ok(readAtRefusal > 64 * 1024 && readAtRefusal <= 64 * 1024 + 65536, `read ${readAtRefusal} bytes`);
});

test('an upload yields exactly N bytes: the leftover first, then socket data', async () => {
  const body = await new Promise<string>((resolve) => {
    void pair(async (s) => {
      const { rest } = await readRequestLine(s, 1024);
      const up = createUploadStream(s, rest, 10);
      let text = '';
      for await (const c of up) text += c;
      resolve(text);
    }).then((p) => {
      p.client.write('{}\n0123');
      setTimeout(() => p.client.write('456789'), 50);
      setTimeout(() => p.close(), 300);
    });
  });
  assert.equal(body, '0123456789');
});

test('an upload whose socket ends early errors with "upload ended after X of N bytes"', async () => {
  const err = await new Promise<StewardError>((resolve) => {
    void pair(async (s) => {
      const { rest } = await readRequestLine(s, 1024);
      try {
        for await (const _ of createUploadStream(s, rest, 10));
      } catch (e) {
        resolve(e as StewardError);
      }
    }).then((p) => p.client.end('{}\n0123'));
  });
  assert.equal(err.code, 'BAD_REQUEST');
  assert.equal(err.message, 'upload ended after 4 of 10 bytes');
});

test('bytes beyond the announced upload size are a protocol error', async () => {
  const err = await new Promise<StewardError>((resolve) => {
    void pair(async (s) => {
      const { rest } = await readRequestLine(s, 1024);
      try {
        for await (const _ of createUploadStream(s, rest, 4));
      } catch (e) {
        resolve(e as StewardError);
      }
    }).then((p) => p.client.end('{}\n0123456'));
  });
  assert.equal(err.code, 'BAD_REQUEST');
  assert.match(err.message, /longer than the announced 4 bytes/);
});

test('a slow upload consumer pauses the socket instead of buffering the upload', async () => {
  const total = 32 * 1024 * 1024;
  const { readWhileStalled, bytes } = await new Promise<{ readWhileStalled: number; bytes: number }>((resolve) => {
    void pair(async (s) => {
      const { rest } = await readRequestLine(s, 1024);
      const up = createUploadStream(s, rest, total);
      // Read nothing for a while: the socket must stop being read.
      await new Promise((r) => setTimeout(r, 300));
      const readWhileStalled = s.bytesRead;
      let bytes = 0;
      for await (const c of up) bytes += (c as Buffer).length;
      resolve({ readWhileStalled, bytes });
    }).then((p) => {
      p.client.write('{}\n');
      p.client.write(Buffer.alloc(total));
    });
  });
  assert.equal(bytes, total);
  assert.ok(readWhileStalled < 4 * 1024 * 1024, `read ${readWhileStalled} bytes while the consumer stalled`);
});
