// A small stand-in for steward-control's trust admin routes (docs/design.md §21.2), in memory, for
// the trust CLI's tests while the server's own routes are written: it keeps what it is sent, adds
// posted signatures to the pending metadata, and publishes a pending root or targets once it
// verifies under @tufjs/models (a root under the previous root and itself, a targets under the
// root), which is all the next command needs. It checks nothing else. Every request is recorded
// (method, path, body) so a test can look at what left the CLI. Any other path goes to `upstream`
// (a real `steward-control serve --admin-listen`, for release add), or is a 404.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Metadata, MetadataKind, type Root, type Targets } from '@tufjs/models';
import { tufKeyOf } from '../../src/platform/trust/tuf-keys.js';

export interface Recorded {
  method: string;
  path: string;
  body: Buffer;
}

export interface FakeTrustAdmin {
  url: string;
  requests: Recorded[];
  // The online private keys it made (POST online-keys), by role, newest last.
  online: Record<'snapshot' | 'timestamp' | 'director', KeyObject[]>;
  roots: Array<Metadata<Root>>;
  targets: Array<Metadata<Targets>>;
  pending: { root: Metadata<Root> | null; targets: Metadata<Targets> | null };
  apps: Map<string, Metadata<Targets>>;
  // Extra fields of the status answer (timestamp, nodes).
  extra: Record<string, unknown>;
  // Answer the status as the server's branch (trust-server) does as of this writing: summaries,
  // no metadata.
  summaryOnly: boolean;
  // Refuse POST online-keys once they exist, as the server's branch does.
  onlineOnce: boolean;
  close(): Promise<void>;
}

const read = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

function verifies(fn: () => void): boolean {
  try {
    fn();
    return true;
  } catch {
    return false;
  }
}

export async function startFakeTrustAdmin(opts: { upstream?: string } = {}): Promise<FakeTrustAdmin> {
  const fake: FakeTrustAdmin = {
    url: '',
    requests: [],
    online: { snapshot: [], timestamp: [], director: [] },
    roots: [],
    targets: [],
    pending: { root: null, targets: null },
    apps: new Map(),
    extra: {},
    summaryOnly: false,
    onlineOnce: false,
    close: async () => undefined,
  };
  const root = () => fake.roots.at(-1) ?? null;
  const publish = () => {
    const p = fake.pending.root;
    const prev = root();
    if (p && (!prev || verifies(() => prev.verifyDelegate('root', p))) && verifies(() => p.verifyDelegate('root', p))) {
      fake.roots.push(p);
      fake.pending.root = null;
    }
    const t = fake.pending.targets;
    const r = root();
    if (t && r && verifies(() => r.verifyDelegate('targets', t))) {
      fake.targets.push(t);
      fake.pending.targets = null;
    }
  };
  const answer = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
    const b = Buffer.from(JSON.stringify(body));
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': b.length }).end(b);
  };
  const md = (m: Metadata<Root | Targets> | null | undefined) => (m ? { metadata: m.toJSON() } : null);
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (!url.pathname.startsWith('/v1/admin/trust')) {
        if (!opts.upstream) return answer(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${url.pathname}` } });
        // Streamed through untouched (release add's upload), recorded as it passes.
        const up = new URL(opts.upstream);
        const chunks: Buffer[] = [];
        const fwd = request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        });
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => fake.requests.push({ method: req.method ?? '', path: url.pathname, body: Buffer.concat(chunks) }));
        req.pipe(fwd);
        return;
      }
      const body = await read(req);
      fake.requests.push({ method: req.method ?? '', path: url.pathname, body });
      if (!req.headers.authorization) return answer(res, 401, { error: { code: 'UNAUTHENTICATED', message: 'no token' } });
      const p = url.pathname;
      if (req.method === 'GET' && p === '/v1/admin/trust') {
        if (fake.summaryOnly) return answer(res, 200, summaryStatus(fake));
        return answer(res, 200, {
          root: md(root()),
          targets: md(fake.targets.at(-1)),
          pending: { root: md(fake.pending.root), targets: md(fake.pending.targets) },
          delegations: Object.values(fake.targets.at(-1)?.signed.delegations?.roles ?? {}).map((r) => {
            const app = r.name.slice('app.'.length);
            return { app, metadata: fake.apps.get(app)?.toJSON() ?? null };
          }),
          ...fake.extra,
        });
      }
      if (req.method === 'POST' && p === '/v1/admin/trust/online-keys') {
        if (fake.onlineOnce && fake.online.snapshot.length > 0) return answer(res, 409, { error: { code: 'STATE_INVALID', message: 'the online keys exist already: they are made once (rotating one is a root rotation naming a new key)' } });
        const rotate = ((JSON.parse(body.toString() || '{}') as { rotate?: string[] }).rotate ?? []) as Array<'snapshot' | 'timestamp' | 'director'>;
        for (const role of ['snapshot', 'timestamp', 'director'] as const) {
          if (fake.online[role].length === 0 || rotate.includes(role)) fake.online[role].push(generateKeyPairSync('ed25519').privateKey);
        }
        // As the server's branch answers: {onlineKeys: {role: {keyid, key}}}.
        const keyOf = (role: 'snapshot' | 'timestamp' | 'director') => {
          const k = tufKeyOf(fake.online[role].at(-1)!);
          return { keyid: k.keyID, key: k.toJSON() };
        };
        return answer(res, 200, { onlineKeys: { snapshot: keyOf('snapshot'), timestamp: keyOf('timestamp'), director: keyOf('director') } });
      }
      const pend = /^\/v1\/admin\/trust\/pending\/(root|targets)(\/signatures)?$/.exec(p);
      if (pend && req.method === 'PUT' && !pend[2]) {
        const json = JSON.parse(body.toString());
        // As the server's branch does: a targets only under a published root.
        if (pend[1] === 'targets' && !root()) return answer(res, 400, { error: { code: 'USAGE', message: 'publish a root first: the targets are signed under its targets role' } });
        if (pend[1] === 'root') fake.pending.root = Metadata.fromJSON(MetadataKind.Root, json);
        else fake.pending.targets = Metadata.fromJSON(MetadataKind.Targets, json);
        return answer(res, 200, { pending: pend[1] });
      }
      if (pend && req.method === 'POST' && pend[2]) {
        const m = fake.pending[pend[1] as 'root' | 'targets'];
        if (!m) return answer(res, 404, { error: { code: 'NOT_FOUND', message: `no pending ${pend[1]}` } });
        const { signatures } = JSON.parse(body.toString()) as { signatures: Array<{ keyid: string; sig: string }> };
        const json = m.toJSON() as { signed: unknown; signatures: Array<{ keyid: string; sig: string }> };
        const merged = [...json.signatures.filter((s) => !signatures.some((n) => n.keyid === s.keyid)), ...signatures];
        const merged2 = { signed: json.signed, signatures: merged } as never;
        if (pend[1] === 'root') fake.pending.root = Metadata.fromJSON(MetadataKind.Root, merged2);
        else fake.pending.targets = Metadata.fromJSON(MetadataKind.Targets, merged2);
        publish();
        return answer(res, 200, { published: fake.pending[pend[1] as 'root' | 'targets'] === null });
      }
      const app = /^\/v1\/admin\/trust\/apps\/([^/]+)$/.exec(p);
      if (app && req.method === 'PUT') {
        fake.apps.set(decodeURIComponent(app[1]!), Metadata.fromJSON(MetadataKind.Targets, JSON.parse(body.toString())));
        return answer(res, 200, { published: true });
      }
      return answer(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${req.method} ${p}` } });
    })().catch((err: unknown) => answer(res, 500, { error: { code: 'INTERNAL', message: String(err) } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () => new Promise((resolve) => server.close(() => resolve()));
  return fake;
}

// The status in the shape of the server's branch (src/control/trust/trust-status.ts there).
function summaryStatus(fake: FakeTrustAdmin): unknown {
  const root = fake.roots.at(-1);
  const top = fake.targets.at(-1);
  const role = (r: Root, name: string) => ({ keyids: [...r.roles[name]!.keyIDs], threshold: r.roles[name]!.threshold });
  return {
    repository: false,
    onlineKeys: null,
    root: root ? { version: root.signed.version, expires: root.signed.expires, ...role(root.signed, 'root'), targets: role(root.signed, 'targets') } : null,
    pending: {
      root: fake.pending.root ? { version: fake.pending.root.signed.version, signatures: [], updatedAt: 0, updatedBy: 'ada' } : null,
      targets: fake.pending.targets ? { version: fake.pending.targets.signed.version, signatures: [], updatedAt: 0, updatedBy: 'ada' } : null,
    },
    targets: top ? { version: top.signed.version, expires: top.signed.expires } : null,
    apps: Object.values(top?.signed.delegations?.roles ?? {}).map((r) => ({ app: r.name.slice(4), role: r.name, keyids: [...r.keyIDs], threshold: r.threshold, version: fake.apps.get(r.name.slice(4))?.signed.version ?? null, expires: null })),
    snapshot: null,
    timestamp: null,
    nodes: { keys: 3, tuf: 1, unreported: 0, metadataStale: 0 },
  };
}
