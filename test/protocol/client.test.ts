import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { linkSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { callHelper, pickSocket } from '../../src/protocol/client.js';
import { rejectsWithCode } from '../helpers/api-server-harness.js';
import { readableCopy } from '../helpers/readable-copy.js';

let dir: string;
const servers: net.Server[] = [];
before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'steward-client-'))));
after(() => {
  for (const s of servers) s.close();
  rmSync(dir, { recursive: true, force: true });
});

// A fake helper that answers each connection with `lines` once the request line arrived.
async function fakeHelper(name: string, answer: (request: string, sock: net.Socket) => void): Promise<string> {
  const p = path.join(dir, name);
  const server = net.createServer((sock) => {
    let buf = '';
    sock.on('error', () => {});
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      const nl = buf.indexOf('\n');
      if (nl >= 0 && !(sock as { answered?: boolean }).answered) {
        (sock as { answered?: boolean }).answered = true;
        answer(buf.slice(0, nl), sock);
      }
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(p, r));
  return p;
}

test('progress lines go to onProgress and the result line resolves', async () => {
  const sock = await fakeHelper('ok.sock', (req, s) => {
    const { id } = JSON.parse(req) as { id: number };
    s.write(JSON.stringify({ id, event: 'progress', attemptId: 'a1', phase: 'fetch', bytes: 5, total: 10 }) + '\n');
    s.end(JSON.stringify({ id, ok: true, result: { done: true } }) + '\n');
  });
  const events: unknown[] = [];
  const result = await callHelper(sock, { v: 1, id: 4, op: 'status' }, { onProgress: (ev) => events.push(ev) });
  assert.deepEqual(result, { done: true });
  assert.deepEqual(events, [{ id: 4, event: 'progress', attemptId: 'a1', phase: 'fetch', bytes: 5, total: 10 }]);
});

test('an error line throws a StewardError with its code, message and attemptId', async () => {
  const sock = await fakeHelper('err.sock', (_req, s) => {
    s.end(JSON.stringify({ id: 1, ok: false, error: { code: 'HELD', message: 'web is held', attemptId: 'att-1' } }) + '\n');
  });
  const err = await rejectsWithCode(callHelper(sock, { v: 1, id: 1, op: 'update' }), 'HELD');
  assert.equal(err.message, 'web is held');
  assert.equal(err.details.attemptId, 'att-1');
});

test('the upload bytes follow the request line', async () => {
  const sock = await fakeHelper('upload.sock', (req, s) => {
    const size = (JSON.parse(req) as { upload: number }).upload;
    s.on('data', () => {});
    s.on('end', () => s.end(JSON.stringify({ id: 1, ok: true, result: { size, got: s.bytesRead - req.length - 1 } }) + '\n'));
  });
  const data = Buffer.alloc(200_000, 1);
  const result = await callHelper(sock, { v: 1, id: 1, op: 'stage', upload: data.length }, { upload: { size: data.length, stream: Readable.from([data]) } });
  assert.deepEqual(result, { size: 200_000, got: 200_000 });
});

test('a missing socket, a socket nobody listens on and a connection closed without an answer are HELPER_UNREACHABLE', async () => {
  await rejectsWithCode(callHelper(path.join(dir, 'absent.sock'), { v: 1, id: 1, op: 'status' }), 'HELPER_UNREACHABLE');

  // A socket file left behind with no listener: connect(2) is refused.
  const live = await fakeHelper('live.sock', () => {});
  linkSync(live, path.join(dir, 'dead.sock'));
  servers.pop()!.close();
  await rejectsWithCode(callHelper(path.join(dir, 'dead.sock'), { v: 1, id: 1, op: 'status' }), 'HELPER_UNREACHABLE');

  const rude = await fakeHelper('rude.sock', (_req, s) => s.end('{"id":1,"event":"progress","attemptId":"a","phase":"x"}\n'));
  const err = await rejectsWithCode(callHelper(rude, { v: 1, id: 1, op: 'status' }), 'HELPER_UNREACHABLE');
  assert.match(err.message, /without an answer/);
});

test('a socket this user may not open is HELPER_UNREACHABLE (EACCES)', { skip: process.getuid?.() !== 0 ? 'needs root to run a child as nobody' : false }, async (t) => {
  const sock = await fakeHelper('private.sock', () => {});
  chmodSync(dir, 0o755);
  chmodSync(sock, 0o600);
  // nobody runs the client from a copy it can read, not from the checkout (with zod, which
  // reads its answer lines).
  const code = readableCopy(['dist/src', 'node_modules/zod']);
  t.after(() => code.cleanup());
  const client = code.path('dist/src/protocol/client.js');
  const script = path.join(dir, 'try.mjs');
  writeFileSync(
    script,
    `import { callHelper } from ${JSON.stringify(client)};\n` +
      `callHelper(${JSON.stringify(sock)}, {v:1,id:1,op:'status'}).catch((e) => { console.log(e.code, e.cause?.code); });\n`,
  );
  chmodSync(script, 0o644);
  const r = spawnSync(process.execPath, [script], { uid: 65534, gid: 65534, encoding: 'utf8' });
  assert.equal(r.stdout.trim(), 'HELPER_UNREACHABLE EACCES', r.stderr);
});

test('pickSocket prefers admin.sock when it may be opened, else helper.sock, and --socket wins', async () => {
  const paths = { adminSock: path.join(dir, 'no-admin.sock'), helperSock: path.join(dir, 'helper.sock') };
  assert.deepEqual(await pickSocket(paths), { path: paths.helperSock, kind: 'helper' });
  const admin = await fakeHelper('admin.sock', () => {});
  assert.deepEqual(await pickSocket({ ...paths, adminSock: admin }), { path: admin, kind: 'admin' });
  assert.deepEqual(await pickSocket(paths, '/x/admin.sock'), { path: '/x/admin.sock', kind: 'admin' });
  assert.deepEqual(await pickSocket(paths, '/x/other.sock'), { path: '/x/other.sock', kind: 'helper' });
});
