// Property tests of the local API's parser and dispatcher (docs/design.md §7, issue 7 item 5): whatever
// bytes or JSON arrive, no exception escapes, every rejection is a StewardError with a closed
// reason code, and a handler runs only for a request its schema and its socket's policy accept.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { isReasonCode, StewardError } from '../../src/core/errors.js';
import type { OpContext } from '../../src/helper/server/api-server.js';
import { makeDispatch, type Handlers } from '../../src/helper/server/dispatch.js';
import { createUploadStream, readRequestLine } from '../../src/protocol/framing.js';
import { ADMIN_ONLY_OPS, ALL_OPS, requestSchemas, responseSchema, type OpName, type SocketKind } from '../../src/protocol/schemas.js';
import { callHelper } from '../../src/protocol/client.js';
import { rawExchange, startTestServers, type TestServers } from '../helpers/api-server-harness.js';
import { mutatedBytes, mutatedJson, nearValidJsonBytes } from './mutate.js';
import { checkProperty, guarded, runsMade } from './property-run.js';
import { validRequestArb, validRequests } from './requests.js';

// Every op answers with what it got; `calls` records each handler call.
const calls: Array<{ op: OpName; request: unknown }> = [];
const recording: Handlers = Object.fromEntries(
  ALL_OPS.map((op) => [
    op,
    async (request: unknown, ctx: OpContext) => {
      calls.push({ op, request });
      let bytes = 0;
      if (ctx.upload) for await (const chunk of ctx.upload) bytes += (chunk as Buffer).length;
      return { op, bytes };
    },
  ]),
);
const dispatch = makeDispatch(recording);
const ctx = (kind: SocketKind): OpContext => ({ kind, id: null, progress() {}, upload: null, uploadSize: 0, closed: new AbortController().signal, peer: async () => ({ ok: false as const, why: 'a test without a socket' }) });
const kindArb = fc.constantFrom<SocketKind>('admin', 'helper');

// Anything a JSON.parse of a request line could give.
const anyRequest = fc.oneof(
  { weight: 1, arbitrary: fc.jsonValue() },
  { weight: 1, arbitrary: fc.record({ v: fc.constantFrom(1, 2, '1'), id: fc.oneof(fc.nat(), fc.string()), op: fc.constantFrom(...ALL_OPS, 'reboot', '') }, { requiredKeys: [] }) },
  { weight: 4, arbitrary: mutatedJson(validRequestArb()) },
);

// What the socket policy of docs/design.md §3.1 forbids on helper.sock, checked on a request a handler got.
function helperSockMayRun(op: OpName, r: Record<string, unknown>): boolean {
  if ((ADMIN_ONLY_OPS as readonly string[]).includes(op)) return false;
  if (op === 'stage' || op === 'update') return r.manifest !== undefined && !r.path && !r.allowUnsigned && !r.allowDowngrade;
  if (op === 'rollback') return r.to === undefined;
  return true;
}

test('the dispatcher answers any request with a handler call its schema and socket allow, or a BAD_REQUEST/FORBIDDEN', async () => {
  await checkProperty(
    'dispatch: schema and policy gate every handler',
    fc.asyncProperty(anyRequest, kindArb, guarded(async (raw, kind) => {
      calls.length = 0;
      const json = JSON.parse(JSON.stringify(raw) ?? 'null') as unknown;
      let result: unknown;
      try {
        result = await dispatch(json, ctx(kind));
      } catch (err) {
        assert.ok(err instanceof StewardError, `not a StewardError: ${String(err)}`);
        assert.ok(err.code === 'BAD_REQUEST' || err.code === 'FORBIDDEN', `${err.code}: ${err.message}`);
        assert.ok(err.message.length > 0);
        assert.equal(calls.length, 0, 'a handler ran for a rejected request');
        return;
      }
      assert.equal(calls.length, 1);
      const { op, request } = calls[0] as { op: OpName; request: Record<string, unknown> };
      assert.deepEqual(result, { op, bytes: 0 });
      assert.ok(requestSchemas[op].safeParse(json).success, 'the handler got a request its schema refuses');
      if (kind === 'helper') assert.ok(helperSockMayRun(op, request), `helper.sock ran ${op} against its policy`);
    })),
    1500,
  );
});

// Feeds `chunks` into a fresh stream the way a socket delivers them, then ends it.
function feed(chunks: Buffer[]): PassThrough {
  const s = new PassThrough();
  for (const c of chunks) s.write(c);
  s.end();
  return s;
}

const chunksArb = fc.oneof(
  fc.array(fc.uint8Array({ maxLength: 96 }).map((a) => Buffer.from(a)), { maxLength: 6 }),
  fc.array(nearValidJsonBytes(validRequestArb()).map((b) => Buffer.concat([b, Buffer.from('\n')])), { minLength: 1, maxLength: 2 }).chain((lines) => {
    const all = Buffer.concat(lines);
    return fc.uniqueArray(fc.nat(all.length), { maxLength: 4 }).map((cuts) => {
      const at = [0, ...cuts.sort((a, b) => a - b), all.length];
      return at.slice(1).map((end, i) => all.subarray(at[i], end));
    });
  }),
);

test('readRequestLine returns the bytes before the first newline when they fit, else BAD_REQUEST', async () => {
  await checkProperty(
    'framing: request line model',
    fc.asyncProperty(chunksArb, fc.integer({ min: 0, max: 200 }), guarded(async (chunks, maxBytes) => {
      const all = Buffer.concat(chunks);
      const nl = all.indexOf(0x0a);
      const fits = nl >= 0 && nl <= maxBytes;
      // The chunks are emitted by hand, as a socket would deliver them, so that a throw in the
      // parser's 'data' handler (a crash of the helper on a real socket) surfaces right here.
      const socket = new PassThrough();
      const pending = readRequestLine(socket, maxBytes);
      for (const c of chunks) {
        if (c.length === 0) continue; // a socket never delivers an empty read
        try {
          socket.emit('data', c);
        } catch (err) {
          assert.fail(`the parser threw out of its 'data' handler (a process crash on a socket): ${(err as Error).stack}`);
        }
      }
      socket.emit('end');
      try {
        const got = await pending;
        assert.ok(fits, `accepted a line of ${nl} bytes with maxBytes ${maxBytes}`);
        assert.equal(got.line, all.subarray(0, nl).toString('utf8'));
        assert.ok(all.subarray(nl + 1).subarray(0, got.rest.length).equals(got.rest), 'rest is not what followed the newline');
      } catch (err) {
        assert.ok(err instanceof StewardError && err.code === 'BAD_REQUEST', String(err));
        assert.ok(!fits, `refused a line of ${nl} bytes with maxBytes ${maxBytes}: ${err.message}`);
      }
    })),
    2000,
  );
});

// A leftover, the socket's later reads, and an announced size: often one the reads add up to.
const uploadArb = fc
  .tuple(fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)), fc.array(fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)), { maxLength: 5 }))
  .chain(([leftover, chunks]) => {
    const sums = prefixSums(leftover, chunks);
    return fc.tuple(fc.constant(leftover), fc.constant(chunks), fc.oneof(fc.constantFrom(...sums), fc.nat(sums.at(-1) as number + 2)));
  });

// The byte counts at which the upload may end: after the leftover, then after each non-empty read.
function prefixSums(leftover: Buffer, chunks: Buffer[]): number[] {
  const sums = [leftover.length];
  for (const c of chunks) if (c.length > 0) sums.push((sums.at(-1) as number) + c.length);
  return sums;
}

test('an upload stream yields exactly the announced bytes when a read ends there, else fails with BAD_REQUEST', async () => {
  await checkProperty(
    'framing: upload stream model',
    fc.asyncProperty(
      uploadArb,
      guarded(async ([leftover, chunks, size]) => {
        const all = Buffer.concat([leftover, ...chunks]);
        // The stream stops at `size` only between reads: a read that crosses it is an overflow.
        const completes = prefixSums(leftover, chunks).includes(size);
        const got: Buffer[] = [];
        try {
          for await (const c of createUploadStream(feed(chunks), leftover, size)) got.push(c as Buffer);
        } catch (err) {
          assert.ok(err instanceof StewardError && err.code === 'BAD_REQUEST', String(err));
          assert.ok(!completes, `refused an upload whose reads end at the announced ${size} bytes: ${err.message}`);
          const seen = Buffer.concat(got);
          assert.ok(seen.length <= size && seen.equals(all.subarray(0, seen.length)), `handed ${seen.length} bytes to the handler before failing, over the announced ${size} or not the client's`);
          return;
        }
        assert.ok(completes, `accepted ${size} bytes from reads that do not end there`);
        assert.ok(Buffer.concat(got).equals(all.subarray(0, size)), 'the upload is not the first `size` bytes');
      }),
    ),
    500,
  );
});

let servers: TestServers;
before(async () => {
  servers = await startTestServers({}, recording);
});
after(async () => {
  await servers.close();
  process.stdout.write(`# ${runsMade.count} runs in this file\n`);
});

// A request line as bytes: noise, a near-valid request, or a valid request followed by upload bytes.
const wireArb = fc.oneof(
  fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
  nearValidJsonBytes(validRequestArb()).map((b) => Buffer.concat([b, Buffer.from('\n')])),
  fc.tuple(fc.constantFrom(...validRequests()), fc.nat(8), fc.nat(8)).map(([r, announced, sent]) =>
    Buffer.concat([Buffer.from(JSON.stringify({ ...r, upload: announced }) + '\n'), Buffer.alloc(sent, 0x61)]),
  ),
  mutatedBytes(Buffer.from(JSON.stringify(validRequests()[4]) + '\nabc')),
);

test('the real server answers any bytes on either socket with one well-formed final line, and keeps serving', async () => {
  await checkProperty(
    'server: any bytes get a closed answer',
    fc.asyncProperty(wireArb, kindArb, guarded(async (bytes, kind) => {
      const answer = await rawExchange(kind === 'admin' ? servers.adminSock : servers.helperSock, bytes, { end: true });
      const final = answer.lines.at(-1);
      assert.ok(final, `no answer (client error ${answer.errorCode})`);
      assert.ok(responseSchema.safeParse(final).success, `not a response line: ${JSON.stringify(final)}`);
      if (final.ok === false) {
        assert.ok(isReasonCode(final.error.code));
        assert.notEqual(final.error.code, 'INTERNAL', final.error.message);
      }
    })),
    400,
  );
  for (const sock of [servers.adminSock, servers.helperSock]) {
    assert.deepEqual(await callHelper(sock, { v: 1, id: 'check', op: 'status' }, { timeoutMs: 5000 }), { op: 'status', bytes: 0 });
  }
  assert.deepEqual(servers.logs.filter((l) => /bug|unexpected/.test(l)), [], 'the server logged a bug');
});
