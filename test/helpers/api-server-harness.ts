import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { hostConfigSchema, type ApiSettings } from '../../src/core/config-schema.js';
import { StewardError } from '../../src/core/errors.js';
import { startApiServer, type ApiServer } from '../../src/helper/server/api-server.js';
import { openRunDir, prepareRunDir } from '../../src/helper/server/bind-sockets.js';
import { makeDispatch, type Handlers } from '../../src/helper/server/dispatch.js';
import { callHelper } from '../../src/protocol/client.js';

export interface TestServers {
  dir: string;
  runDir: string;
  adminSock: string;
  helperSock: string;
  admin: ApiServer;
  helper: ApiServer;
  logs: string[];
  close(): Promise<void>;
}

// The small op set the socket tests run against: `status` answers at once, `stage`
// counts its upload, `releases` fails like a bug would.
export const testHandlers: Handlers = {
  status: async () => ({ helper: 'up' }),
  stage: async (_req, ctx) => {
    let bytes = 0;
    if (ctx.upload) for await (const chunk of ctx.upload) bytes += (chunk as Buffer).length;
    return { bytes };
  },
  releases: async () => {
    throw new Error('boom: a handler bug');
  },
};

// Both sockets of a helper in a fresh temp run folder, bound the way main.ts binds them.
export async function startTestServers(
  settings: Partial<ApiSettings> = {},
  handlers: Handlers = testHandlers,
): Promise<TestServers> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-api-'));
  const runDir = path.join(dir, 'run', 'steward');
  const api = { ...hostConfigSchema.parse({}).api, ...settings };
  const dispatch = makeDispatch(handlers);
  const logs: string[] = [];
  const log = (m: string) => void logs.push(m);
  await prepareRunDir(runDir);
  const adminSock = path.join(runDir, 'admin.sock');
  const helperSock = path.join(runDir, 'helper.sock');
  const admin = await startApiServer({ socketPath: adminSock, kind: 'admin', settings: api, dispatch, log });
  const helper = await startApiServer({ socketPath: helperSock, kind: 'helper', settings: api, dispatch, log });
  await openRunDir(runDir);
  return {
    dir,
    runDir,
    adminSock,
    helperSock,
    admin,
    helper,
    logs,
    async close() {
      await admin.close();
      await helper.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RawAnswer {
  // Every complete line the server sent, parsed.
  lines: Array<Record<string, any>>;
  // The socket error the client saw, if any (EPIPE, ECONNRESET after an early close).
  errorCode: string | null;
  // Whether the client's write callback reported success.
  writeOk: boolean | null;
  ms: number;
}

// Connects, writes `data` (ending the write side if `end`), and collects lines until the server closes.
export function rawExchange(socketPath: string, data: string | Buffer, opts: { end?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const socket = net.createConnection(socketPath);
    let text = '';
    let errorCode: string | null = null;
    let writeOk: boolean | null = null;
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      socket.write(data, (err) => (writeOk = !err));
      if (opts.end) socket.end();
    });
    socket.on('data', (d: string) => (text += d));
    socket.on('error', (err: NodeJS.ErrnoException) => (errorCode = err.code ?? err.message));
    socket.on('close', () => {
      const lines = text
        .split('\n')
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as Record<string, any>);
      resolve({ lines, errorCode, writeOk, ms: performance.now() - t0 });
    });
  });
}

// The final answer line of a raw exchange.
export function finalLine(a: RawAnswer): Record<string, any> {
  const last = a.lines.at(-1);
  assert.ok(last, `expected an answer line, got none (client error ${a.errorCode})`);
  return last;
}

// `status` on both sockets still answers.
export async function assertStillAnswers(s: TestServers): Promise<void> {
  for (const sock of [s.adminSock, s.helperSock]) {
    assert.deepEqual(await callHelper(sock, { v: 1, id: 'check', op: 'status' }, { timeoutMs: 5000 }), { helper: 'up' });
  }
}

// Expects `p` to reject with a StewardError of `code`; returns it.
export async function rejectsWithCode(p: Promise<unknown>, code: string): Promise<StewardError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof StewardError, `expected a StewardError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected ${code}, but it resolved`);
}

// A syntactically valid (not verified) manifest envelope, enough for schema and socket policy.
export const FAKE_MANIFEST = { payload: 'e30=', sig: 'c2ln', keyId: '0123456789abcdef' };
