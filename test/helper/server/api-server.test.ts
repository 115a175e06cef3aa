import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { StewardError } from '../../../src/core/errors.js';
import { callHelper } from '../../../src/protocol/client.js';
import { assertStillAnswers, rejectsWithCode, startTestServers, testHandlers } from '../../helpers/api-server-harness.js';

test('progress lines reach the client before the final line, and StewardError details travel', async () => {
  const s = await startTestServers({}, {
    ...testHandlers,
    stage: async (_req, ctx) => {
      ctx.progress({ attemptId: 'a1', phase: 'fetch', bytes: 1, total: 2 });
      throw new StewardError('INTEGRITY_MISMATCH', 'web 1.0.0: bytes do not match', { details: { attemptId: 'a1' } });
    },
  });
  try {
    const events: unknown[] = [];
    const req = { v: 1, id: 9, op: 'stage', app: 'web', version: '1.0.0' };
    const err = await rejectsWithCode(callHelper(s.adminSock, req, { onProgress: (e) => events.push(e) }), 'INTEGRITY_MISMATCH');
    assert.equal(err.details.attemptId, 'a1');
    assert.deepEqual(events, [{ id: 9, event: 'progress', attemptId: 'a1', phase: 'fetch', bytes: 1, total: 2 }]);
  } finally {
    await s.close();
  }
});

test("a phase's progress lines are at most ten a second, but its first and its last always go", async () => {
  const s = await startTestServers({}, {
    ...testHandlers,
    stage: async (_req, ctx) => {
      // A 19 MB copy reported per 64 KiB chunk, then a phase without a total, then the next.
      for (let b = 1; b <= 300; b++) ctx.progress({ attemptId: 'a1', phase: 'fetch', bytes: b, total: 300 });
      for (let b = 1; b <= 300; b++) ctx.progress({ attemptId: 'a1', phase: 'extract', bytes: b });
      ctx.progress({ attemptId: 'a1', phase: 'commit' });
      await new Promise((r) => setTimeout(r, 150));
      ctx.progress({ attemptId: 'a1', phase: 'commit', bytes: 1 });
      return { ok: true };
    },
  });
  try {
    const events: Array<{ phase: string; bytes?: number }> = [];
    const req = { v: 1, id: 9, op: 'stage', app: 'web', version: '1.0.0' };
    await callHelper(s.adminSock, req, { onProgress: (e) => events.push(e as { phase: string; bytes?: number }) });
    assert.deepEqual(
      events.map((e) => [e.phase, e.bytes]),
      [
        ['fetch', 1],
        ['fetch', 300],
        ['extract', 1],
        ['commit', undefined],
        ['commit', 1],
      ],
    );
  } finally {
    await s.close();
  }
});

test('a client that goes away mid-op aborts ctx.closed, the op still finishes, and nothing crashes', async () => {
  let clientGone!: () => void;
  const gone = new Promise<void>((r) => (clientGone = r));
  let finish!: (v: { sawClosed: boolean }) => void;
  const finished = new Promise<{ sawClosed: boolean }>((r) => (finish = r));
  const s = await startTestServers({}, {
    ...testHandlers,
    releases: async (_req, ctx) => {
      ctx.progress({ attemptId: 'a', phase: 'start' });
      await gone;
      // Keep writing progress to the vanished client until the server notices (EPIPE).
      for (let i = 0; i < 200 && !ctx.closed.aborted; i++) {
        ctx.progress({ attemptId: 'a', phase: 'work', bytes: i });
        await new Promise((r) => setTimeout(r, 10));
      }
      finish({ sawClosed: ctx.closed.aborted });
      return 'done';
    },
  });
  try {
    const sock = net.createConnection(s.adminSock);
    sock.on('error', () => {});
    sock.write('{"v":1,"id":1,"op":"releases","app":"web"}\n');
    await new Promise((r) => sock.once('data', r));
    sock.destroy();
    clientGone();
    assert.deepEqual(await finished, { sawClosed: true });
    await assertStillAnswers(s);
  } finally {
    await s.close();
  }
});

test('an upload refused before it is read still gets its error line to the client', async () => {
  const s = await startTestServers();
  try {
    // status takes no upload: dispatch refuses at once while the client is still sending 8 MB.
    const size = 8 * 1024 * 1024;
    const { Readable } = await import('node:stream');
    // Repeated: without a lingering close the answer races the client's EPIPE.
    for (let round = 0; round < 20; round++) {
      const stream = Readable.from((function* () {
        for (let i = 0; i < 128; i++) yield Buffer.alloc(size / 128);
      })());
      await rejectsWithCode(callHelper(s.helperSock, { v: 1, id: 1, op: 'status', upload: size }, { upload: { size, stream } }), 'BAD_REQUEST');
    }
    await assertStillAnswers(s);
  } finally {
    await s.close();
  }
});

test('close() stops the server and removes its socket file', async () => {
  const s = await startTestServers();
  await s.admin.close();
  await s.helper.close();
  await rejectsWithCode(callHelper(s.adminSock, { v: 1, id: 1, op: 'status' }), 'HELPER_UNREACHABLE');
  await s.close();
});
