// A control plane in-process for tests: a real store (SQLite in a mkdtemp folder, or a backend of
// store-backends.ts), the real HTTP
// server on 127.0.0.1 port 0, a fake clock, and fake nodes that enroll and heartbeat over HTTP
// with keys made here (a node key, and a "helper" key that signs their receipts).
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ENROLL_PATH, HEARTBEAT_PATH } from '../../src/core/control-api.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import type { Clock } from '../../src/platform/clock.js';
import { DOMAINS, generateKeyPair, signEnvelope, signPayloadBytes } from '../../src/platform/keys.js';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { createToken } from '../../src/control/enroll/tokens.js';
import { createAdminRouter } from '../../src/control/admin/router.js';
import { parseTrustedProxies } from '../../src/control/operators/request-source.js';
import { startServeMetrics, type ServeMetrics } from '../../src/control/metrics/serve-metrics.js';
import { startControlServer, type ControlServer, type ControlServerOptions } from '../../src/control/server/control-server.js';
import { openStore } from '../../src/control/store/open-store.js';
import { openSqliteStore, type SqliteStoreOptions, type SqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';
import type { Labels } from '../../src/core/labels.js';
import type { ControlStore } from '../../src/control/store/store.js';
import type { StoreBackend } from './store-backends.js';

export const T0 = 1_800_000_000_000;
export const MINUTE = 60_000;

// A clock that moves only when told. A sleep ends when advance() passes its deadline, or by its
// signal; with tickMs 0 the server has no timer and tests call server.tick() themselves.
export class FakeClock implements Clock {
  private sleepers: Array<{ until: number; resolve: () => void }> = [];
  private awaitingSleep: Array<() => void> = [];
  constructor(public t = T0) {}
  now = () => this.t;
  monotonic = () => this.t;
  sleep = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      const entry = { until: this.t + ms, resolve };
      this.sleepers.push(entry);
      for (const w of this.awaitingSleep.splice(0)) w();
      signal?.addEventListener('abort', () => {
        this.sleepers = this.sleepers.filter((x) => x !== entry);
        reject(signal.reason);
      }, { once: true });
    });
  // Resolves once something sleeps on this clock (a timer loop that finished its work).
  asleep(): Promise<void> {
    return this.sleepers.length > 0 ? Promise.resolve() : new Promise((resolve) => this.awaitingSleep.push(resolve));
  }
  advance(ms: number): void {
    this.t += ms;
    const due = this.sleepers.filter((x) => x.until <= this.t);
    this.sleepers = this.sleepers.filter((x) => x.until > this.t);
    for (const x of due) x.resolve();
  }
}

export interface Control<S extends ControlStore = SqliteStore> {
  dir: string;
  dbFile: string;
  store: S;
  server: ControlServer;
  clock: FakeClock;
  releaseKey: { privatePem: string; publicPem: string; keyId: string };
  // The metrics listener's URL (`metrics` option), or null.
  metricsUrl: string | null;
  token(ttlMs?: number, labels?: Labels): Promise<string>;
  addRelease(app: string, version: string, opts?: { expiresDays?: number; bytes?: Buffer }): Promise<void>;
  close(): Promise<void>;
}

interface ControlOptions {
  heartbeatSeconds?: number;
  tickMs?: number;
  // How often the TUF timestamp re-signer looks (docs/design.md §21.4); by default only at start.
  resignCheckMs?: number;
  heartbeatBatch?: ControlServerOptions['heartbeatBatch'];
  clock?: FakeClock;
  admin?: { trustedProxies?: string[]; sleep?: (ms: number) => Promise<void> };
  metrics?: { cacheMs?: number };
  // Artifact download slots and the slowest download kept (serve's --max-downloads,
  // --anonymous-downloads, --download-min-rate); by default serve's.
  downloads?: Pick<ControlServerOptions, 'maxDownloads' | 'anonymousDownloads' | 'minDownloadRate'>;
  // The analysis's judgement (docs/design.md §19), when a test wraps or replaces it.
  judge?: ControlServerOptions['judge'];
  // The wake-up waits and held heartbeats the instance holds (serve's --max-waits); by default serve's.
  waits?: Pick<ControlServerOptions, 'maxWaits' | 'maxWaitsPerNode'>;
}

// Starts a control plane with a fresh database, its store on the fake clock and in the server's
// commit mode (groupSync; `groupSync` replaces its fsync seam).
// `admin` also serves the admin API and dashboard sessions on the same listener, its waits after
// failed authentications going to `admin.sleep` (default: none). `metrics`: also the metrics
// listener of `serve --metrics-listen` on 127.0.0.1 port 0 (the fleet gauges cached `cacheMs`,
// default 0: every scrape reads the store; no process metrics).
export async function startControlInProcess(opts: ControlOptions & { groupSync?: SqliteStoreOptions['groupSync'] } = {}): Promise<Control> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-control-'));
  const dbFile = path.join(dir, 'control.db');
  const clock = opts.clock ?? new FakeClock();
  const store = openSqliteStore(dbFile, { create: true, clock, groupSync: opts.groupSync ?? true });
  return serveStore({ dir, dbFile, store, clock, artifactsDir: artifactsDirOf(dbFile) }, opts);
}

// The same on a fresh database of `backend` (its artifacts in a mkdtemp folder).
export async function startControlOn(backend: StoreBackend, opts: ControlOptions = {}): Promise<Control<ControlStore>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-control-'));
  const dbFile = await backend.createDatabase();
  const clock = opts.clock ?? new FakeClock();
  const store = await openStore(dbFile, { clock });
  return serveStore({ dir, dbFile, store, clock, artifactsDir: path.join(dir, 'artifacts') }, opts);
}

async function serveStore<S extends ControlStore>(at: { dir: string; dbFile: string; store: S; clock: FakeClock; artifactsDir: string }, opts: ControlOptions): Promise<Control<S>> {
  const { dir, dbFile, store, clock, artifactsDir } = at;
  const heartbeatSeconds = opts.heartbeatSeconds ?? 30;
  await store.write((tx) => tx.settings.set('heartbeatSeconds', String(heartbeatSeconds)));
  const admin = opts.admin && createAdminRouter({ store, artifactsDir, trustedProxies: parseTrustedProxies(opts.admin.trustedProxies ?? []), clock: { sleep: opts.admin.sleep ?? (async () => undefined) } });
  const metrics: ServeMetrics | null = opts.metrics ? await startServeMetrics(store, { host: '127.0.0.1', port: 0 }, { cacheMs: opts.metrics.cacheMs ?? 0, processMetrics: false }) : null;
  const server = await startControlServer({
    store: metrics?.store ?? store, artifactsDir, host: '127.0.0.1', port: 0, heartbeatSeconds, clock, tickMs: opts.tickMs ?? 0, resignCheckMs: opts.resignCheckMs ?? 0, heartbeatBatch: opts.heartbeatBatch, metrics: metrics?.heartbeats,
    ...(admin ? { admin } : {}),
    ...(opts.judge ? { judge: opts.judge } : {}),
    ...opts.downloads,
    ...opts.waits,
  });
  const releaseKey = generateKeyPair();
  return {
    dir,
    dbFile,
    store,
    server,
    clock,
    releaseKey,
    metricsUrl: metrics?.url ?? null,
    token: async (ttlMs = 3_600_000, labels = {}) => (await store.write((tx) => createToken(tx, ttlMs, labels))).token,
    addRelease: async (app, version, o = {}) => {
      const file = path.join(dir, `${app}-${version}.tgz`);
      writeFileSync(file, o.bytes ?? Buffer.from(`tarball of ${app} ${version}`));
      await addRelease(store, { app, version, file, url: null, baseUrl: server.url, privateKeyPem: releaseKey.privatePem, expiresDays: o.expiresDays ?? 30, artifactsDir });
    },
    close: async () => {
      await server.close();
      await metrics?.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface HttpAnswer {
  status: number;
  body: any;
}

// Sends a request with node:http and parses the JSON answer (raw bytes in `raw`).
export function request(url: string, p: string, method: string, body?: Buffer | string): Promise<HttpAnswer & { raw: Buffer; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url + p, { method, headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        let parsed: unknown = null;
        if ((res.headers['content-type'] ?? '').startsWith('application/json')) parsed = JSON.parse(raw.toString('utf8'));
        resolve({ status: res.statusCode ?? 0, body: parsed, raw, headers: res.headers });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

// POSTs bytes and parses the JSON answer.
export function post(url: string, p: string, body: Buffer | string): Promise<HttpAnswer> {
  return request(url, p, 'POST', body);
}

// Every table's rows, to compare a store before and after a request.
export function dumpStore(store: SqliteStore): Record<string, unknown[]> {
  const tables = store.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as Array<{ name: string }>;
  return Object.fromEntries(tables.map((t) => [t.name, store.db.prepare(`SELECT * FROM "${t.name}" ORDER BY rowid`).all()]));
}

export interface AppReport {
  name: string;
  current: string | null;
  previous?: string | null;
  held?: boolean;
  blocked?: boolean;
}

// What a fake node needs of a control plane: its clock, its URL and a way to get a token.
export interface ControlLike {
  clock: { now(): number };
  server: { url: string };
  token(): string | Promise<string>;
}

// A node as the agent and helper would be, with keys made in the test.
export class FakeNode {
  readonly node = generateKeyPairSync('ed25519');
  readonly helper = generateKeyPairSync('ed25519');
  nodeId = '';
  seq = 0;
  receiptSeq = 0;
  apps: AppReport[] = [];

  constructor(private readonly control: ControlLike, readonly hostname = 'host') {}

  pem(key: KeyObject): string {
    return key.export({ format: 'pem', type: 'spki' }).toString();
  }

  // An enrollment body: the envelope signed by `signer` under `domain`, and the helper key's proof
  // (helperSig) over the same payload bytes, made by `helperSigner` (null: no helperSig at all).
  enrollBody(
    token: string,
    over: Record<string, unknown> = {},
    signer: KeyObject = this.node.privateKey,
    domain: (typeof DOMAINS)[keyof typeof DOMAINS] = DOMAINS.enroll,
    helperSigner: KeyObject | null = this.helper.privateKey,
  ): string {
    const payload = { v: 1, token, nodePublicKey: this.pem(this.node.publicKey), helperPublicKey: this.pem(this.helper.publicKey), hostname: this.hostname, sentAt: this.control.clock.now(), ...over };
    const envelope = signEnvelope(domain, payload, signer);
    if (!helperSigner) return JSON.stringify(envelope);
    return JSON.stringify({ ...envelope, helperSig: signPayloadBytes(DOMAINS.enrollHelper, Buffer.from(envelope.payload, 'base64'), helperSigner) });
  }

  // Enrolls with a fresh token and keeps the nodeId.
  async enroll(token?: string): Promise<this> {
    const a = await post(this.control.server.url, ENROLL_PATH, this.enrollBody(token ?? (await this.control.token())));
    if (a.status !== 200) throw new Error(`enroll: ${a.status} ${JSON.stringify(a.body)}`);
    this.nodeId = a.body.nodeId;
    return this;
  }

  // A receipt signed by this node's helper key, with the next receipt seq unless told.
  receipt(over: Record<string, unknown> = {}, key: KeyObject = this.helper.privateKey): Envelope {
    const seq = (over.seq as number | undefined) ?? ++this.receiptSeq;
    const now = this.control.clock.now();
    return signEnvelope(DOMAINS.receipt, {
      v: 1, nodeId: this.nodeId, app: 'web', attemptId: 'manual-1', seq, fromVersion: '1.0.0', targetVersion: '1.1.0',
      integrity: null, outcome: 'active', startedAt: now - 1000, updatedAt: now, ...over,
    }, key);
  }

  // A heartbeat payload with the next seq.
  payload(over: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      v: 1, nodeId: this.nodeId, seq: ++this.seq, sentAt: this.control.clock.now(), bootId: 'boot-1', agentVersion: '0.1.0',
      apps: this.apps.map((a) => ({ previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: null }, ...a })),
      receipts: [], ...over,
    };
  }

  body(over: Record<string, unknown> = {}, key: KeyObject = this.node.privateKey, domain: (typeof DOMAINS)[keyof typeof DOMAINS] = DOMAINS.heartbeat): string {
    return JSON.stringify(signEnvelope(domain, this.payload(over), key));
  }

  // Sends a heartbeat and returns the answer.
  heartbeat(over: Record<string, unknown> = {}): Promise<HttpAnswer> {
    return post(this.control.server.url, HEARTBEAT_PATH, this.body(over));
  }

  // Heartbeats and answers each desired entry with a receipt of `outcome` on the next heartbeat;
  // returns the desired entries it answered.
  async answer(outcome: 'active' | 'rolled-back' | 'failed' | 'refused', reason?: string, extra: Record<string, unknown> = {}): Promise<Array<{ app: string; version: string; attemptId: string }>> {
    const first = await this.heartbeat();
    if (first.status !== 200) throw new Error(`heartbeat: ${first.status} ${JSON.stringify(first.body)}`);
    const desired = first.body.desired as Array<{ app: string; version: string; attemptId: string }>;
    if (desired.length === 0) return [];
    const receipts = desired.map((d) =>
      this.receipt({ app: d.app, attemptId: d.attemptId, targetVersion: d.version, outcome, ...(reason ? { reason: { code: reason, message: reason } } : {}), ...extra }),
    );
    if (outcome === 'active') for (const d of desired) this.setCurrent(d.app, d.version);
    const second = await this.heartbeat({ receipts });
    if (second.status !== 200) throw new Error(`heartbeat: ${second.status} ${JSON.stringify(second.body)}`);
    return desired;
  }

  setCurrent(app: string, version: string | null): void {
    this.apps = [...this.apps.filter((a) => a.name !== app), { name: app, current: version }];
  }
}

// `count` nodes enrolled with fresh tokens, named host-0, host-1, ..., each reporting web 1.0.0.
export async function enrollNodes(control: ControlLike, count: number): Promise<FakeNode[]> {
  const nodes: FakeNode[] = [];
  for (let i = 0; i < count; i++) {
    const n = await new FakeNode(control, `host-${i}`).enroll();
    n.setCurrent('web', '1.0.0');
    nodes.push(n);
  }
  return nodes;
}

// The rollout ticker's tick, with the fake clock moved on 1 s every 10 ms while it has not
// resolved. Why: on PostgreSQL a wake (NOTIFY) arrives after its commit, so a tick it started
// may overlap the test's next clock.advance(); the ticker then measures a tick as long as the
// advance and pauses that long on the fake clock before the tick the test asked for.
export async function tickThrough(control: Pick<Control<ControlStore>, 'server' | 'clock'>): Promise<void> {
  let done = false;
  const ticked = control.server.tick().finally(() => (done = true));
  while (!done) {
    await new Promise((r) => setTimeout(r, 10));
    if (!done) control.clock.advance(1000);
  }
  await ticked;
}
