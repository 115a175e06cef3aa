// Sends requests to the control plane and reads their answers, with a deadline and a cap on
// the answer's size. TLS verifies against Node's CAs plus `controlPlane.caFile`. With several
// control-plane URLs (docs/design.md §13) a request goes to the one that last answered and moves on to
// the next after no answer or a 5xx.
//
// The client keeps its connection (HTTP keep-alive, over TLS too): a heartbeat and the wake-up
// wait that follows it (wake-wait.ts, docs/design.md §18) go one after the other on one
// connection, which therefore costs one handshake while the waits go on. A request that finds
// its kept connection closed by the server before any answer is sent again once on a new one.
// A new connection over https offers the TLS session the last one to the same origin was
// given, in memory only: the server then resumes it without a new certificate signature, which
// took its CPU per connection from 1,180 to 740 us with an RSA-2048 certificate here
// (bench/control-tls.ts, row `7 tls`). A server that cannot resume it (a restart, another
// instance) makes a full handshake, whose certificate is checked as always; a session is
// dropped after any failure of a request that offered it.
import type { Agent as HttpAgent } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { DESIRED_FIELDS_HEADER, HEARTBEAT_VERSIONS_HEADER, OPTIONAL_DESIRED_FIELDS, RECEIPT_VERSIONS_HEADER } from '../core/control-api.js';
import { HEARTBEAT_VERSIONS } from '../core/heartbeat-schema.js';
import { controlPlaneUrls, sameControlPlaneUrl } from '../core/control-plane-urls.js';
import { StewardError } from '../core/errors.js';
import { RECEIPT_VERSIONS } from '../core/receipt-schema.js';
import { readExtraCa } from '../platform/extra-ca.js';
import { httpModule, httpsModule, startRequest } from '../platform/http-request.js';
import { readOwnVersion } from '../platform/own-version.js';
import { checkControlPlaneUrl, endpointUrl, type ControlPlaneSettings } from './control-plane-url.js';
import type { Logf } from './convergence.js';

// An answer bigger than this is refused: a heartbeat answer holds at most 256 desired entries
// of ~2 KiB each and 4,096 acked seqs, far below 4 MiB.
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface PostAnswer {
  status: number;
  // The parsed JSON body, or undefined when the body is empty or not JSON.
  json: unknown;
}

// The seam the heartbeat loop and enrollment use. post resolves with any HTTP answer and
// throws CONTROL_PLANE_UNREACHABLE when there is none (network, TLS, timeout, oversized body).
export interface ControlPlaneClient {
  // The URL the next request goes to first: the last one that answered (before any answer, the
  // one the client was started on).
  readonly url: URL;
  // Every control-plane URL, in the order they are tried.
  readonly urls: readonly URL[];
  // One round: from `url`, each URL at most once, moving on after no answer or a 5xx; any
  // other answer (a 401, a 409...) comes from a live control plane and ends the round there.
  // When none answers, the last URL's failure: its 5xx answer, or CONTROL_PLANE_UNREACHABLE.
  // `signal` aborts a request in flight (the agent stopping): it then throws CONTROL_PLANE_UNREACHABLE.
  // `extra`: headers to send beside the usual ones, and a deadline of its own per URL (a held
  // heartbeat, whose answer may take its hold's seconds).
  post(endpoint: string, body: unknown, signal?: AbortSignal, extra?: PostExtra): Promise<PostAnswer>;
  // A GET in one round as post's, its path and headers made afresh for each URL tried (a wait's
  // timeout shrinks as the round goes on), with `timeoutMs` as that try's deadline.
  // `maxBytes`: a cap on the answer's body other than MAX_ANSWER_BYTES (the trust bundle's).
  get(request: () => { endpoint: string; headers: Record<string, string>; timeoutMs: number; maxBytes?: number }, signal?: AbortSignal): Promise<PostAnswer>;
  // Drops the kept connections (the agent stopping). Idempotent.
  close(): void;
}

export interface PostExtra {
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export interface ControlPlaneClientOptions {
  // The deadline of each request, per URL.
  timeoutMs?: number;
  // The URL to start from (the one that answered before a restart); ignored when not listed.
  startAt?: string | undefined;
  // Called, and awaited, each time a URL other than the last one reported answers (the first
  // answer, when `startAt` is not given or not listed). Must not throw.
  onAnswered?: (url: URL) => Promise<void>;
  // Where a move to the next URL is logged.
  log?: Logf;
}

// A client for the control plane at `settings.url` (each URL checked by the URL policy first).
export async function createControlPlaneClient(settings: ControlPlaneSettings, opts: ControlPlaneClientOptions = {}): Promise<ControlPlaneClient> {
  const { timeoutMs = DEFAULT_TIMEOUT_MS, onAnswered, log = () => {} } = opts;
  const urls = controlPlaneUrls(settings.url).map((u) => checkControlPlaneUrl(u, settings.insecure === true));
  let ca: string[] | undefined;
  try {
    ca = await readExtraCa(settings.caFile);
  } catch (err) {
    throw new StewardError('CONFIG_INVALID', `cannot read controlPlane.caFile ${settings.caFile}: ${(err as Error).message}`, { cause: err });
  }
  // The last TLS session of each origin (scheme, host and port).
  const sessions = new Map<string, Buffer>();
  const listed = opts.startAt === undefined ? -1 : urls.findIndex((u) => sameControlPlaneUrl(u.href, opts.startAt as string));
  let current = Math.max(listed, 0);
  let reported = listed;
  const at = (i: number) => urls[i] as URL;
  const kept = keptConnections();
  const round = async (make: () => { endpoint: string; send: (u: URL) => Promise<PostAnswer> }, signal: AbortSignal | undefined): Promise<PostAnswer> => {
    let failure: { answer: PostAnswer } | { error: unknown } = { error: new Error('no control plane URL') };
    for (let n = 0; n < urls.length; n++) {
      const i = (current + n) % urls.length;
      const made = make();
      const u = endpointUrl(at(i), made.endpoint);
      let why: string;
      try {
        const answer = await made.send(u);
        if (answer.status < 500) {
          current = i;
          if (reported !== i) {
            reported = i;
            await onAnswered?.(at(i));
          }
          return answer;
        }
        failure = { answer };
        why = `${u.origin}${u.pathname}: HTTP ${answer.status}`;
      } catch (err) {
        if (signal?.aborted) throw err;
        failure = { error: err };
        why = (err as Error).message;
      }
      if (urls.length > 1) log('no answer from the control plane: %s; %s', why, n + 1 < urls.length ? `trying ${at((i + 1) % urls.length).href}` : 'no URL left this round');
    }
    if ('answer' in failure) return failure.answer;
    throw failure.error;
  };
  return {
    get url() {
      return at(current);
    },
    urls,
    post: (endpoint, body, signal, extra) => {
      const data = Buffer.from(JSON.stringify(body), 'utf8');
      const headers = { ...extra?.headers, 'Content-Type': 'application/json', 'Content-Length': data.length, [RECEIPT_VERSIONS_HEADER]: RECEIPT_VERSIONS.join(', '), [HEARTBEAT_VERSIONS_HEADER]: HEARTBEAT_VERSIONS.join(', '), [DESIRED_FIELDS_HEADER]: OPTIONAL_DESIRED_FIELDS.join(', ') };
      const deadline = extra?.timeoutMs ?? timeoutMs;
      return round(() => ({ endpoint, send: (u) => sendRequest(u, 'POST', headers, data, { ca, timeoutMs: deadline, signal, sessions, kept }) }), signal);
    },
    get: (request, signal) =>
      round(() => {
        const r = request();
        return { endpoint: r.endpoint, send: (u) => sendRequest(u, 'GET', r.headers, null, { ca, timeoutMs: r.timeoutMs, signal, sessions, kept, ...(r.maxBytes !== undefined ? { maxBytes: r.maxBytes } : {}) }) };
      }, signal),
    close: () => kept.close(),
  };
}

// The keep-alive agents of one client, one per scheme, made at their first request.
function keptConnections() {
  let agents: { http?: HttpAgent; https?: HttpAgent } = {};
  return {
    of(tls: boolean): HttpAgent {
      const key = tls ? 'https' : 'http';
      // Why a free connection is closed after 4 s: the control plane closes one idle 5 s, and a
      // request sent as it does would fail.
      return (agents[key] ??= tls ? new (httpsModule().Agent)({ keepAlive: true, timeout: FREE_SOCKET_MS }) : new (httpModule().Agent)({ keepAlive: true, timeout: FREE_SOCKET_MS }));
    },
    close() {
      agents.http?.destroy();
      agents.https?.destroy();
      agents = {};
    },
  };
}
type Kept = ReturnType<typeof keptConnections>;

// Whether `agent` keeps an idle connection to `u`'s host and port (agent.freeSockets, keyed by
// names that start with `host:port:`, agent.getName's documented form).
function hasFreeConnection(agent: HttpAgent, u: URL): boolean {
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const port = u.port === '' ? (u.protocol === 'https:' ? '443' : '80') : u.port;
  const prefix = `${host}:${port}:`;
  return Object.entries(agent.freeSockets).some(([name, list]) => name.startsWith(prefix) && (list?.length ?? 0) > 0);
}
const FREE_SOCKET_MS = 4_000;

const USER_AGENT = `steward-agent/${readOwnVersion()}`;

function unreachable(where: URL, message: string, cause?: unknown): StewardError {
  return new StewardError('CONTROL_PLANE_UNREACHABLE', `${where.origin}${where.pathname}: ${message}`, cause === undefined ? {} : { cause });
}

interface SendOptions {
  ca: string[] | undefined;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  sessions: Map<string, Buffer>;
  kept: Kept;
  // The answer's cap (MAX_ANSWER_BYTES unless given).
  maxBytes?: number;
}

// Why once more: a kept connection the server closed just as the request went out fails before
// any answer; the request was not taken, and a new connection is the usual remedy.
async function sendRequest(u: URL, method: string, headers: Record<string, string | number>, data: Buffer | null, o: SendOptions): Promise<PostAnswer> {
  try {
    return await sendOnce(u, method, headers, data, o);
  } catch (err) {
    if (!(err instanceof StaleConnection)) throw err;
    if (o.signal?.aborted) throw err.original;
    return sendOnce(u, method, headers, data, o).catch((e: unknown) => {
      throw e instanceof StaleConnection ? e.original : e;
    });
  }
}

// A request that failed on a kept connection before any answer came.
class StaleConnection extends Error {
  constructor(readonly original: StewardError) {
    super(original.message);
  }
}

const sessionWatched = new WeakSet<object>();

function sendOnce(u: URL, method: string, headers: Record<string, string | number>, data: Buffer | null, o: SendOptions): Promise<PostAnswer> {
  const { signal, sessions, timeoutMs } = o;
  const tls = u.protocol === 'https:';
  const agent = o.kept.of(tls);
  // A session is offered only for a new connection. On Node 24 (not on 20) an https.Agent
  // keys its pool by the session too, so a request that offered one could not take the kept
  // connection that was opened without it, and every request after the first opened another.
  const offered = tls && !hasFreeConnection(agent, u) ? sessions.get(u.origin) : undefined;
  return new Promise((resolve, reject) => {
    let settled = false;
    let answered = false;
    const done = (err: Error | null, value?: PostAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      // Why only on a failure: an answered request hands its connection back to be kept.
      if (err) req.destroy();
      if (err && offered && sessions.get(u.origin) === offered) sessions.delete(u.origin);
      if (err) reject(req.reusedSocket && !answered && !signal?.aborted && err instanceof StewardError && !timedOut ? new StaleConnection(err) : err);
      else resolve(value as PostAnswer);
    };
    let timedOut = false;
    const req = startRequest(u, method, { ...headers, 'User-Agent': USER_AGENT, Accept: 'application/json' }, o.ca, { agent, ...(offered ? { session: offered } : {}) });
    // The server's session ticket (TLS 1.3 sends it after the handshake), kept for the next
    // connection; only from a connection whose certificate was verified. Once per connection:
    // a kept one carries many requests.
    if (tls) {
      req.once('socket', (socket) => {
        if (sessionWatched.has(socket)) return;
        sessionWatched.add(socket);
        socket.on('session', (session: Buffer) => {
          if ((socket as TLSSocket).authorized) sessions.set(u.origin, session);
        });
      });
    }
    // Before anything can destroy it: a destroyed request emits 'error' (socket hang up), and an
    // 'error' without a listener would crash the agent.
    req.on('error', (err: NodeJS.ErrnoException) => done(unreachable(u, `${err.message}${err.code ? ` (${err.code})` : ''}`, err)));
    const timer = setTimeout(() => {
      timedOut = true;
      done(unreachable(u, `no complete answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const onAbort = () => done(unreachable(u, 'the request was aborted (stopping)'));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    req.once('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > (o.maxBytes ?? MAX_ANSWER_BYTES)) return done(unreachable(u, `the answer is larger than ${o.maxBytes ?? MAX_ANSWER_BYTES} bytes`));
        chunks.push(c);
      });
      res.on('error', (err) => done(unreachable(u, `reading the answer failed: ${err.message}`, err)));
      res.once('end', () => {
        let json: unknown;
        try {
          json = size === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          json = undefined;
        }
        done(null, { status: res.statusCode ?? 0, json });
      });
    });
    req.end(data ?? undefined);
  });
}
