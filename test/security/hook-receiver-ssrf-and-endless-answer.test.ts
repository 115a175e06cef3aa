// A hook's receiver is hostile (docs/design.md §19): a redirect to an internal address (a cloud
// metadata service) is never followed, only reported; an answer body that never ends, or is huge,
// is read to its first 4 KiB and the attempt ends at its deadline; what the receiver said is shown
// as one short printable line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_ANSWER_BYTES, postEvent } from '../../src/control/hooks/post-event.js';

async function serve(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void>; hits: string[] }> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

test('a redirect to another address is reported, never followed', async () => {
  const inside = await serve((_req, res) => res.end('secret metadata'));
  const hook = await serve((req, res) => res.writeHead(Number(new URL(req.url ?? '/', 'http://x').searchParams.get('s')), { location: `${inside.url}/latest/meta-data/iam` }).end());
  try {
    for (const status of [301, 302, 303, 307, 308]) {
      const out = await postEvent(`${hook.url}/h?s=${status}`, '{}', {}, { timeoutMs: 2000 });
      assert.equal(out.ok, false);
      assert.equal(out.status, status);
      assert.match(out.message, /redirects are never followed/);
    }
    assert.equal(inside.hits.length, 0);
  } finally {
    await hook.close();
    await inside.close();
  }
});

test('an answer that never ends, or is huge, costs at most its deadline and 4 KiB read', async () => {
  const endless = await serve((_req, res) => {
    res.writeHead(200);
    const t = setInterval(() => res.write('x'), 5);
    res.on('close', () => clearInterval(t));
  });
  const huge = await serve((_req, res) => res.writeHead(500).end('\u0007\u001b]0;pwned\u0007' + 'y'.repeat(50 * 1024 * 1024)));
  try {
    const a = await postEvent(`${endless.url}/h`, '{}', {}, { timeoutMs: 300 });
    // A 2xx status is an acknowledgement as soon as its body's first 4 KiB (or its end) arrive;
    // one that trickles forever meets the deadline instead.
    assert.equal(a.ok, false);
    assert.match(a.message, /no answer within 300 ms/);
    const b = await postEvent(`${huge.url}/h`, '{}', {}, { timeoutMs: 5000 });
    assert.equal(b.ok, false);
    assert.ok(b.message.length <= 220, b.message);
    assert.doesNotMatch(b.message, /[\u0000-\u001f]/);
    assert.match(b.message, /^answered 500: \]0;pwned y+\.\.\.$/);
    assert.ok(MAX_ANSWER_BYTES <= 4096);
  } finally {
    await endless.close();
    await huge.close();
  }
});
