// A small control plane for the agent's tests, built on the real pure verifier: enrollment,
// heartbeats (verifyHeartbeat), artifacts, and answers a test can script. It records every
// heartbeat it was sent, accepted or not.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KeyObject } from 'node:crypto';
import { enrollPayloadSchema, type DesiredEntry } from '../../src/core/control-api.js';
import type { HeartbeatPayload } from '../../src/core/heartbeat-schema.js';
import type { ReceiptPayload } from '../../src/core/receipt-schema.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { ackedSeqs, verifyHeartbeat, type KnownNode } from '../../src/control/heartbeat/verify-heartbeat.js';
import { DOMAINS, keyIdOf, openEnvelope, parsePublicKey, verifyEnvelopeBytes } from '../../src/platform/keys.js';

export interface Scripted {
  status: number;
  json: unknown;
}

export interface RecordedHeartbeat {
  payload: HeartbeatPayload;
  status: number;
}

interface Node {
  nodeId: string;
  nodeKey: KeyObject;
  helperKey: KeyObject;
  lastSeq: number;
  receipts: Map<number, ReceiptPayload>;
  envelopes: Map<number, Envelope>;
}

export class FakeControlPlane {
  readonly nodes = new Map<string, Node>();
  readonly tokens = new Set<string>();
  readonly heartbeats: RecordedHeartbeat[] = [];
  readonly enrollBodies: unknown[] = [];
  // Answers given instead of the real ones, first in first out (the body is still recorded).
  readonly script: Scripted[] = [];
  readonly artifacts = new Map<string, Buffer>();
  desired: DesiredEntry[] = [];
  heartbeatSeconds = 1;
  // The heartbeat versions its answers list (docs/design.md §16); none listed: the agent sends v1.
  heartbeatVersions: number[] | null = null;
  // The fleet's TUF versions its answers name (docs/design.md §21.2), and the bundle
  // GET /v1/trust/bundle answers; the roots it was asked for, in order.
  trust: { rootVersion: number; timestampVersion: number } | null = null;
  trustBundle: unknown = null;
  readonly trustAsked: number[] = [];
  now: () => number = () => Date.now();
  private server: http.Server | null = null;
  private nextNode = 1;
  port = 0;

  // Enrolls a node directly (in-process tests).
  addNode(nodeId: string, nodeKey: KeyObject, helperKey: KeyObject, lastSeq = 0): Node {
    const n = { nodeId, nodeKey, helperKey, lastSeq, receipts: new Map<number, ReceiptPayload>(), envelopes: new Map<number, Envelope>() };
    this.nodes.set(nodeId, n);
    return n;
  }

  // Every receipt stored, of every node, by seq.
  storedReceipts(): ReceiptPayload[] {
    return [...this.nodes.values()].flatMap((n) => [...n.receipts.values()]).sort((a, b) => a.seq - b.seq);
  }

  // Handles one request; the in-process tests call this directly instead of over HTTP.
  handle(method: string, url: string, body: Buffer): Scripted & { body?: Buffer } {
    if (method === 'GET' && url.startsWith('/v1/artifacts/')) {
      const a = this.artifacts.get(url.slice('/v1/artifacts/'.length));
      return a ? { status: 200, json: undefined, body: a } : { status: 404, json: { error: { code: 'NOT_FOUND', message: url } } };
    }
    if (method === 'GET' && url.startsWith('/v1/trust/bundle?root=')) {
      this.trustAsked.push(Number(url.slice('/v1/trust/bundle?root='.length)));
      return this.trustBundle ? { status: 200, json: this.trustBundle } : { status: 404, json: { error: { code: 'NOT_FOUND', message: url } } };
    }
    if (method !== 'POST') return { status: 404, json: { error: { code: 'NOT_FOUND', message: url } } };
    if (url === '/v1/enroll') return this.enroll(body);
    if (url === '/v1/heartbeat') return this.heartbeat(body);
    return { status: 404, json: { error: { code: 'NOT_FOUND', message: url } } };
  }

  private enroll(body: Buffer): Scripted {
    const env = JSON.parse(body.toString('utf8'));
    this.enrollBodies.push(env);
    const scripted = this.script.shift();
    if (scripted) return scripted;
    const payload = enrollPayloadSchema.parse(JSON.parse(Buffer.from(env.payload, 'base64').toString('utf8')));
    const nodeKey = parsePublicKey(payload.nodePublicKey);
    const opened = openEnvelope(env, DOMAINS.enroll, new Map([[keyIdOf(nodeKey), nodeKey]]));
    if (!opened.ok) return { status: 401, json: { error: { code: 'BAD_SIGNATURE', message: opened.reason } } };
    // The helper key's proof over the same payload bytes (the contract's helperSig).
    const helperKey = parsePublicKey(payload.helperPublicKey);
    const proof = typeof env.helperSig === 'string' ? verifyEnvelopeBytes({ payload: env.payload, sig: env.helperSig, keyId: keyIdOf(helperKey) }, opened.bytes, DOMAINS.enrollHelper, new Map([[keyIdOf(helperKey), helperKey]])) : null;
    if (!proof?.ok) return { status: 401, json: { error: { code: 'BAD_SIGNATURE', message: `helperSig: ${proof ? proof.reason : 'missing'}` } } };
    if (!this.tokens.delete(payload.token)) return { status: 401, json: { error: { code: 'TOKEN_INVALID', message: 'unknown or used token' } } };
    const nodeId = `node-${this.nextNode++}`;
    this.addNode(nodeId, nodeKey, helperKey);
    return { status: 200, json: { nodeId, heartbeatSeconds: this.heartbeatSeconds } };
  }

  private heartbeat(body: Buffer): Scripted {
    let payload: HeartbeatPayload | null = null;
    try {
      payload = JSON.parse(Buffer.from(JSON.parse(body.toString('utf8')).payload, 'base64').toString('utf8'));
    } catch {
      payload = null;
    }
    const record = (r: Scripted) => {
      if (payload) this.heartbeats.push({ payload, status: r.status });
      return r;
    };
    const scripted = this.script.shift();
    if (scripted) return record(scripted);
    const lookup = (id: string): KnownNode | null => {
      const n = this.nodes.get(id);
      return n ? { nodeId: n.nodeId, nodeKey: n.nodeKey, helperKey: () => n.helperKey, lastSeq: n.lastSeq, storedReceipt: (seq: number) => n.envelopes.get(seq) ?? null } : null;
    };
    const v = verifyHeartbeat(body, lookup, () => null, this.now());
    if (!v.ok) {
      return record({ status: v.status, json: { error: { code: v.code, message: v.message }, ...(v.lastSeq !== undefined ? { lastSeq: v.lastSeq } : {}), ...(v.serverTime !== undefined ? { serverTime: v.serverTime } : {}) } });
    }
    const node = this.nodes.get(v.heartbeat.nodeId) as Node;
    node.lastSeq = v.heartbeat.seq;
    for (const r of v.receipts) {
      node.receipts.set(r.payload.seq, r.payload);
      node.envelopes.set(r.payload.seq, r.envelope);
    }
    return record({ status: 200, json: { ackedSeqs: ackedSeqs(v), desired: this.desired, heartbeatSeconds: this.heartbeatSeconds, ...(this.heartbeatVersions ? { heartbeatVersions: this.heartbeatVersions } : {}), ...(this.trust ? { trust: this.trust } : {}) } });
  }

  // Serves over HTTP on 127.0.0.1 (on `port` when given: to come back after stop()).
  async listen(port = this.port): Promise<string> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r = this.handle(req.method ?? 'GET', req.url ?? '/', Buffer.concat(chunks));
        res.statusCode = r.status;
        if (r.body) return void res.end(r.body);
        res.setHeader('Content-Type', 'application/json');
        res.end(r.json === undefined ? '' : JSON.stringify(r.json));
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  // Stops listening (connections refused until listen() again).
  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}
