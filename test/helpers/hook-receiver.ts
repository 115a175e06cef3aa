import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

// A hook's receiver for the tests: records every POST (headers and body) and answers as `mode` says:
// 204, a status, a redirect (to `location`), or never (it holds the request open: a slow receiver).
// Over https when given a key and certificate (a private CA's, test/helpers/tls-cert.ts).
export type ReceiverMode = { kind: 'ok' } | { kind: 'status'; status: number; body?: string } | { kind: 'redirect'; status: number; location: string } | { kind: 'hang' };

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface HookReceiver {
  url: string;
  port: number;
  received: Received[];
  mode: ReceiverMode;
  // Resolves once `n` requests in all have arrived.
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startHookReceiver(opts: { tls?: { key: Buffer; cert: Buffer }; port?: number; mode?: ReceiverMode } = {}): Promise<HookReceiver> {
  const received: Received[] = [];
  const waiters: Array<() => void> = [];
  const held = new Set<http.ServerResponse>();
  const r: HookReceiver = {
    url: '',
    port: 0,
    received,
    mode: opts.mode ?? { kind: 'ok' },
    waitFor: (n, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        if (received.length >= n) return resolve();
        const t = setTimeout(() => reject(new Error(`the receiver got ${received.length} request(s), not ${n}, within ${timeoutMs} ms`)), timeoutMs);
        const waiter = () => {
          if (received.length < n) return void waiters.push(waiter);
          clearTimeout(t);
          resolve();
        };
        waiters.push(waiter);
      }),
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      for (const w of waiters.splice(0)) w();
      const m = r.mode;
      if (m.kind === 'ok') return void res.writeHead(204).end();
      if (m.kind === 'status') return void res.writeHead(m.status, { 'content-type': 'text/plain' }).end(m.body ?? '');
      if (m.kind === 'redirect') return void res.writeHead(m.status, { location: m.location }).end();
      held.add(res);
    });
  };
  const server = opts.tls ? https.createServer({ key: opts.tls.key, cert: opts.tls.cert }, handler) : http.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  r.port = (server.address() as AddressInfo).port;
  r.url = `${opts.tls ? 'https://localhost' : 'http://127.0.0.1'}:${r.port}/hook`;
  return r;
}
