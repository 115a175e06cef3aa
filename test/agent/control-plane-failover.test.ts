// The control-plane client with several URLs (docs/design.md §13), over real sockets on loopback: it
// moves on after no answer or a 5xx, never after a 4xx, stays on the last URL that answered, and
// tries each URL at most once per request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { format } from 'node:util';
import { createControlPlaneClient } from '../../src/agent/control-plane-client.js';
import { StewardError } from '../../src/core/errors.js';
import { freePort } from '../fixtures/app-releases.js';

interface Stub {
  url: string;
  // Requests seen, answered or not.
  hits: number;
  // The status this stub answers with; null: it accepts the request and never answers.
  status: number | null;
  close(): Promise<void>;
  // Listens again on the same port after close().
  reopen(): Promise<void>;
}

async function stub(status: number | null, port = 0): Promise<Stub> {
  let server: http.Server;
  const s: Stub = {
    url: '',
    hits: 0,
    status,
    close: async () => {
      if (!server.listening) return;
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
    reopen: async () => {
      await listen(Number(new URL(s.url).port));
    },
  };
  const listen = async (p: number) => {
    server = http.createServer((_req, res) => {
      s.hits++;
      if (s.status === null) return;
      res.writeHead(s.status, { 'Content-Type': 'application/json' }).end(JSON.stringify(s.status < 300 ? { ok: true } : { error: { code: 'X', message: `status ${s.status}` } }));
    });
    await new Promise<void>((r) => server.listen(p, '127.0.0.1', () => r()));
    s.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  };
  await listen(port);
  return s;
}

async function deadUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}/`;
}

test('a first URL with nothing listening: the request goes through the second, which the client then stays on', { timeout: 10_000 }, async () => {
  const dead = await deadUrl();
  const live = await stub(200);
  const answered: string[] = [];
  const logs: string[] = [];
  try {
    const client = await createControlPlaneClient({ url: [dead, live.url] }, { onAnswered: async (u) => void answered.push(u.href), log: (f, ...a) => logs.push(format(f, ...a)) });
    assert.equal(client.url.href, dead);
    const r = await client.post('/v1/heartbeat', {});
    assert.equal(r.status, 200);
    assert.equal(client.url.href, live.url);
    assert.deepEqual(answered, [live.url]);
    assert.match(logs.join('\n'), /no answer from the control plane: http:\/\/127\.0\.0\.1:\d+\/v1\/heartbeat: .*ECONNREFUSED.*; trying http:\/\/127\.0\.0\.1:\d+\//);
    await client.post('/v1/heartbeat', {});
    assert.equal(live.hits, 2);
    assert.deepEqual(answered, [live.url], 'reported once: it is still the same URL');
  } finally {
    await live.close();
  }
});

test('a 503 moves on to the next URL; a 401 or a 409 is an answer and does not', { timeout: 10_000 }, async () => {
  const busy = await stub(503);
  const refusing = await stub(401);
  const next = await stub(200);
  try {
    const viaBusy = await createControlPlaneClient({ url: [busy.url, next.url] });
    assert.equal((await viaBusy.post('/v1/heartbeat', {})).status, 200);
    assert.deepEqual([busy.hits, next.hits], [1, 1]);
    assert.equal(viaBusy.url.href, next.url);

    const via401 = await createControlPlaneClient({ url: [refusing.url, next.url] });
    assert.equal((await via401.post('/v1/heartbeat', {})).status, 401);
    refusing.status = 409;
    assert.equal((await via401.post('/v1/heartbeat', {})).status, 409);
    assert.deepEqual([refusing.hits, next.hits], [2, 1], 'the second URL saw nothing more');
    assert.equal(via401.url.href, refusing.url);
  } finally {
    for (const s of [busy, refusing, next]) await s.close();
  }
});

test('after failing over it stays on the second URL when the first comes back, and goes back to the first when the second goes down', { timeout: 10_000 }, async () => {
  const first = await stub(200);
  const second = await stub(200);
  await first.close();
  try {
    const client = await createControlPlaneClient({ url: [first.url, second.url] });
    await client.post('/v1/heartbeat', {});
    assert.equal(client.url.href, second.url);
    await first.reopen();
    for (let i = 0; i < 3; i++) assert.equal((await client.post('/v1/heartbeat', {})).status, 200);
    assert.deepEqual([first.hits, second.hits], [0, 4], 'the first is back but the client stays on the second');
    await second.close();
    assert.equal((await client.post('/v1/heartbeat', {})).status, 200);
    assert.equal(first.hits, 1);
    assert.equal(client.url.href, first.url);
  } finally {
    await first.close();
    await second.close();
  }
});

test('a URL that accepts and never answers fails over after the deadline', { timeout: 10_000 }, async () => {
  const hang = await stub(null);
  const live = await stub(200);
  try {
    const client = await createControlPlaneClient({ url: [hang.url, live.url] }, { timeoutMs: 300 });
    assert.equal((await client.post('/v1/heartbeat', {})).status, 200);
    assert.deepEqual([hang.hits, live.hits], [1, 1]);
    assert.equal(client.url.href, live.url);
  } finally {
    await hang.close();
    await live.close();
  }
});

test('one request tries each URL at most once: then the last failure, a 5xx answer or CONTROL_PLANE_UNREACHABLE, and the client stays where it was', { timeout: 10_000 }, async () => {
  const a = await stub(200);
  const b = await stub(502);
  const c = await stub(503);
  try {
    const client = await createControlPlaneClient({ url: [a.url, b.url, c.url] });
    await client.post('/v1/heartbeat', {});
    a.status = 500;
    const r = await client.post('/v1/heartbeat', {});
    assert.equal(r.status, 503, 'the last URL tried answers for the round');
    assert.deepEqual([a.hits, b.hits, c.hits], [2, 1, 1]);
    assert.equal(client.url.href, a.url, 'no URL answered: the next round starts where this one did');
    await c.close();
    await assert.rejects(client.post('/v1/heartbeat', {}), (e: StewardError) => e.code === 'CONTROL_PLANE_UNREACHABLE' && /ECONNREFUSED/.test(e.message));
    assert.deepEqual([a.hits, b.hits], [3, 2]);
  } finally {
    await a.close();
    await b.close();
  }
});

test('the client starts from the URL that answered before (startAt) when it is listed, else from the first', { timeout: 10_000 }, async () => {
  const a = await stub(200);
  const b = await stub(200);
  try {
    const reported: string[] = [];
    const onB = await createControlPlaneClient({ url: [a.url, b.url] }, { startAt: b.url, onAnswered: async (u) => void reported.push(u.href) });
    assert.equal(onB.url.href, b.url);
    await onB.post('/v1/heartbeat', {});
    assert.deepEqual([a.hits, b.hits, reported.length], [0, 1, 0], 'already recorded: nothing to report');
    const unlisted = await createControlPlaneClient({ url: [a.url, b.url] }, { startAt: 'https://gone.example/' });
    assert.equal(unlisted.url.href, a.url);
  } finally {
    await a.close();
    await b.close();
  }
});

test('an aborted request does not move on to the next URL', { timeout: 10_000 }, async () => {
  const hang = await stub(null);
  const live = await stub(200);
  try {
    const client = await createControlPlaneClient({ url: [hang.url, live.url] });
    const stop = new AbortController();
    const pending = client.post('/v1/heartbeat', {}, stop.signal);
    for (let i = 0; hang.hits === 0 && i < 500; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(hang.hits, 1, 'the first URL has the request');
    stop.abort();
    await assert.rejects(pending, (e: StewardError) => e.code === 'CONTROL_PLANE_UNREACHABLE' && /aborted/.test(e.message));
    assert.equal(live.hits, 0);
    assert.equal(client.url.href, hang.url);
  } finally {
    await hang.close();
    await live.close();
  }
});

test('every URL of a list is held to the URL policy before any connection', { timeout: 10_000 }, async () => {
  const live = await stub(200);
  try {
    await assert.rejects(createControlPlaneClient({ url: [live.url, 'http://cp.example:8080'] }), (e: StewardError) => e.code === 'CONFIG_INVALID' && /cp\.example:8080/.test(e.message));
    assert.equal(live.hits, 0);
  } finally {
    await live.close();
  }
});
