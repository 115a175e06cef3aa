// The control plane's HTTP(S) server (docs/design.md §6, §9): enrollment, heartbeats, artifacts, and the
// rollout ticker (docs/design.md §13), woken by every commit that stores verdicts.
import type http from 'node:http';
import { ARTIFACTS_PREFIX, DESIRED_FIELDS_HEADER, ENROLL_PATH, HEARTBEAT_PATH, HOLD_HEADER, MAX_BODY_BYTES, HEARTBEAT_VERSIONS_HEADER, parseDesiredFields, parseHoldHeader, RECEIPT_VERSIONS_HEADER, WAIT_PATH } from '../../core/control-api.js';
import { HEARTBEAT_VERSIONS } from '../../core/heartbeat-schema.js';
import { RECEIPT_VERSIONS } from '../../core/receipt-schema.js';
import { parseOfferedVersions } from '../../core/control-plane-accepts.js';
import { StewardError } from '../../core/errors.js';
import type { Clock } from '../../platform/clock.js';
import { logger } from '../../platform/log.js';
import type { AdminRouter } from '../admin/router.js';
import { enrollNode } from '../enroll/enroll-node.js';
import { createHeartbeatBatcher, type GroupCommitHooks, type HeartbeatBatcher } from '../heartbeat/group-commit.js';
import { observeHeartbeats, type HeartbeatMetrics } from '../metrics/observe-heartbeats.js';
import { answerProbe, isProbePath, METRICS_PATH } from '../metrics/probes.js';
import type { JudgeStep } from '../rollouts/judge-steps.js';
import { desiredFor } from '../rollouts/desired.js';
import { startRolloutTicker } from '../rollouts/rollout-ticker.js';
import type { ControlStore } from '../store/store.js';
import { answerHeld, heartbeatNodeId } from '../wakeups/hold-heartbeat.js';
import { answerWait } from '../wakeups/wait-route.js';
import { WaitRegistry } from '../wakeups/wait-registry.js';
import { errorAnswer } from './answer.js';
import { limitConnections, listen } from './listen.js';
import { DOWNLOAD_RETRY_AFTER_S, sendArtifact } from './artifacts.js';
import { parseIndexPath, sendIndex, sendPack, sendPatch } from './packs.js';
import { DEFAULT_MAX_DOWNLOADS, type MinDownloadRate } from './download-limits.js';
import { DownloadSlots, identifyDownloader } from './download-access.js';
import { createAuthenticator, type Authenticator } from '../admin/authenticate.js';
import { readBody } from './read-body.js';
import { createListenerServer, type ServeTls } from './serve-tls.js';
import { sendJson } from './send.js';
import { answerTrustBundle, TRUST_BUNDLE_PATH } from '../trust/bundle-route.js';
import { withTrust } from '../trust/heartbeat-trust.js';
import { RESIGN_CHECK_MS, startTimestampResigner } from '../trust/resign-timestamps.js';
import type { StopPoints } from './test-stop-points.js';

const log = logger('control:server');

// What a heartbeat or an enrollment is told to wait when the database stayed busy.
const BUSY_RETRY_AFTER_S = 1;

export interface ControlServerOptions {
  store: ControlStore;
  // Where kept release tarballs live (catalog/artifact-path.ts).
  artifactsDir: string;
  // Artifact bodies sent at once (--max-downloads; default DEFAULT_MAX_DOWNLOADS); past it, 503.
  maxDownloads?: number;
  // Of those, the most without a credential (--anonymous-downloads; default an eighth), and the
  // slowest download kept (--download-min-rate; null: none). download-access.ts, artifacts.ts.
  anonymousDownloads?: number;
  minDownloadRate?: MinDownloadRate | null;
  host: string;
  port: number;
  // https with these (serve-tls.ts); plain http without.
  tls?: ServeTls;
  heartbeatSeconds: number;
  // For the tick's sleeps and its pacing; decisions take the store's clock.
  clock: Pick<Clock, 'sleep' | 'monotonic'>;
  // Checks an operator token sent with a download (slowed on failure as on the admin API).
  downloadAuth?: Authenticator;
  // How often the rollout ticker ticks without a wake (rollout-ticker.ts); 0 turns the timer
  // off (tests call tick()).
  tickMs?: number;
  // How often the timestamp re-signer looks (trust/resign-timestamps.ts; default a minute); 0
  // looks once at start only (tests call resignTimestamp()). With tickMs 0 (a server whose tests
  // drive its timers) the default is 0 too: no sleeper of its own on a test's fake clock.
  resignCheckMs?: number;
  // Test only: where this process stops itself (test-stop-points.ts).
  stopAt?: StopPoints;
  // The analysis's judgement (docs/design.md §19); tests and benches pass their own or wrap it.
  judge?: JudgeStep;
  // Group commit of heartbeats (group-commit.ts): the most heartbeats in one commit, and test seams.
  heartbeatBatch?: { max?: number; hooks?: GroupCommitHooks };
  // What every answer resting on a write waits for; a test seam (default: the store's durable()).
  durable?: () => Promise<void>;
  // The admin API and dashboard sessions (admin/router.ts), when --admin-listen is this address.
  admin?: AdminRouter;
  // This instance's metrics (--metrics-listen), told of every heartbeat and stored receipt.
  metrics?: HeartbeatMetrics;
  // The most wake-up waits (GET /v1/wait) this instance holds at once (wakeups/wait-registry.ts;
  // default DEFAULT_MAX_WAITS), and the most of one node.
  maxWaits?: number;
  maxWaitsPerNode?: number;
  // Answers GET /metrics on this listener: only when --metrics-listen names its address (by
  // default the metrics have a listener of their own and this one serves no /metrics).
  answerMetrics?: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;
}

export interface ControlServer {
  url: string;
  // Advances every running rollout no other instance is advancing, now, as the timer does.
  tick(): Promise<void>;
  // Re-signs the fleet's TUF timestamp now when it is due, as the timer does (trust/resign-timestamps.ts).
  resignTimestamp(): Promise<number | null>;
  // Heartbeat commits made so far and the heartbeats they held.
  heartbeatStats(): { commits: number; heartbeats: number };
  // Stops the timer and the listener, and drops idle connections. Idempotent.
  close(): Promise<void>;
  // An https listener's new certificate, key and ticket keys, for the connections from now on
  // (serve's SIGHUP); absent on plain http.
  reloadTls?(t: ServeTls): void;
}

// Starts the server and resolves once it listens; rejects (USAGE, listen.ts) with nothing left
// running when it cannot.
export async function startControlServer(opts: ControlServerOptions): Promise<ControlServer> {
  const { store, clock } = opts;
  const durable = opts.durable ?? (() => store.durable());
  const heartbeats = observeHeartbeats(createHeartbeatBatcher({
    store, heartbeatSeconds: opts.heartbeatSeconds, maxBatch: opts.heartbeatBatch?.max, hooks: opts.heartbeatBatch?.hooks, durable, stopAt: opts.stopAt,
    onReceiptsStored: opts.metrics && ((r) => opts.metrics!.receiptsStored(r)),
  }), opts.metrics);
  const slots = new DownloadSlots(opts.maxDownloads ?? DEFAULT_MAX_DOWNLOADS, ...(opts.anonymousDownloads !== undefined ? [opts.anonymousDownloads] : []));
  const downloads: Downloads = { slots, auth: opts.downloadAuth ?? createAuthenticator({ store, clock, durable }), minRate: opts.minDownloadRate === undefined ? undefined : opts.minDownloadRate };
  const waits = new WaitRegistry({ clock, ...(opts.maxWaits !== undefined ? { maxWaits: opts.maxWaits } : {}), ...(opts.maxWaitsPerNode !== undefined ? { perNode: opts.maxWaitsPerNode } : {}) });
  const stopNodeWakes = store.onNodeWake((ids) => waits.wake(ids));
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    handle(opts, heartbeats, durable, downloads, waits, req, res).catch((err: unknown) => {
      log('request %s %s failed: %s', req.method, req.url, (err as Error)?.stack ?? String(err));
      sendJson(res, errorAnswer(500, 'INTERNAL', 'internal error; see the server log'), true);
    });
  };
  const { server, reloadTls } = createListenerServer(opts.tls, handler);
  // Per-request limits: a slow or stalled client cannot hold a connection for long.
  limitConnections(server, 30_000);
  let listening: Awaited<ReturnType<typeof listen>>;
  try {
    listening = await listen(server, opts.host, opts.port, !!opts.tls);
  } catch (err) {
    stopNodeWakes();
    throw err;
  }
  const url = listening.url;
  // Why only now: a listener that could not start leaves no ticker behind to keep the process
  // alive with nothing to serve.
  const ticker = startRolloutTicker({ store, clock, tickMs: opts.tickMs ?? 1000, stopAt: opts.stopAt, ...(opts.judge ? { judge: opts.judge } : {}) });
  const resigner = startTimestampResigner({ store, clock, everyMs: opts.resignCheckMs ?? (opts.tickMs === 0 ? 0 : RESIGN_CHECK_MS) });

  return {
    url,
    tick: ticker.tick,
    resignTimestamp: resigner.check,
    heartbeatStats: heartbeats.stats,
    // Why the waits first: their answers (503, go elsewhere) end the connections they hold, which
    // the listener's close waits for.
    close: () => listening.close(() => {
      ticker.close();
      resigner.close();
      stopNodeWakes();
      waits.close();
    }),
    ...(reloadTls ? { reloadTls } : {}),
  };
}

interface Downloads {
  slots: DownloadSlots;
  auth: Authenticator;
  minRate: MinDownloadRate | null | undefined;
}

async function handle(
  opts: ControlServerOptions,
  heartbeats: HeartbeatBatcher,
  durable: () => Promise<void>,
  downloads: Downloads,
  waits: WaitRegistry,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const { store } = opts;
  const pathOnly = (req.url ?? '/').split('?')[0] ?? '/';
  if (pathOnly === ENROLL_PATH || pathOnly === HEARTBEAT_PATH) {
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return sendJson(res, errorAnswer(405, 'NOT_FOUND', `${pathOnly} takes POST`));
    }
    const body = await readBody(req, MAX_BODY_BYTES);
    if (!body.ok) {
      if (body.reason === 'aborted') return void res.destroy();
      log('%s body over %d bytes refused', pathOnly, MAX_BODY_BYTES);
      if (pathOnly === HEARTBEAT_PATH) opts.metrics?.heartbeatAnswered('BAD_BODY', null);
      sendJson(res, errorAnswer(400, 'BAD_BODY', `the body is over the limit of ${MAX_BODY_BYTES} bytes`), true);
      // Why: the rest of an oversized body is never read; the connection goes once the answer is out.
      res.once('finish', () => setTimeout(() => req.socket.destroy(), 1000).unref());
      return;
    }
    // A heartbeat's answer waits for the commit that holds it, shared with those arriving beside
    // it, and for that commit's fsync. An enrollment's too: the node writes the nodeId it is
    // answered, and the token it used is spent.
    try {
      if (pathOnly === HEARTBEAT_PATH) {
        const raw = await heartbeats.submit(body.body);
        const ask = parseHoldHeader(req.headers[HOLD_HEADER]);
        const fields = parseDesiredFields(req.headers[DESIRED_FIELDS_HEADER]);
        const readsTrust = fields.includes('trust') || fields.includes('directive');
        const sender = raw.status === 200 && (ask || readsTrust) ? heartbeatNodeId(body.body) : null;
        // The fleet's TUF versions and each entry's directive, to an agent that reads them (trust/heartbeat-trust.ts).
        const answer = readsTrust ? await withTrust(req, withAcceptedVersions(req, raw), store, sender) : withAcceptedVersions(req, raw);
        const nodeId = ask ? sender : null;
        if (!ask || nodeId === null) return sendJson(res, answer);
        // The heartbeat is committed: only its answer waits (wakeups/hold-heartbeat.ts).
        const reread = async () => {
          const desired = await store.read(async (tx) => desiredFor(tx, nodeId, await tx.now()));
          return withTrust(req, withAcceptedVersions(req, { status: 200, body: { ...(raw.body as object), desired } }), store, nodeId);
        };
        return await answerHeld({ req, res, nodeId, ask, answer, reread, waits });
      }
      const answer = await enrollNode(store, body.body, opts.heartbeatSeconds);
      await durable();
      return sendJson(res, answer);
    } catch (err) {
      // The database refused the transaction again and again (other instances writing the same
      // rows): nothing was recorded, and the node is told to come back, not that we broke.
      if (!(err instanceof StewardError && err.code === 'BUSY')) throw err;
      log('%s answered 503 BUSY: %s', pathOnly, err.message);
      res.setHeader('retry-after', String(BUSY_RETRY_AFTER_S));
      return sendJson(res, errorAnswer(503, 'BUSY', `the control plane's database is busy with other instances' writes; nothing was recorded: retry after ${BUSY_RETRY_AFTER_S} s`));
    }
  }
  if (pathOnly === WAIT_PATH) return answerWait(req, res, store, waits);
  if (pathOnly === TRUST_BUNDLE_PATH) return answerTrustBundle(req, res, store);
  if (isProbePath(pathOnly)) return answerProbe(pathOnly, store, req, res);
  if (pathOnly === METRICS_PATH && opts.answerMetrics) return opts.answerMetrics(req, res);
  if (pathOnly.startsWith(ARTIFACTS_PREFIX)) {
    // A release's file index, packs of its objects and static patches (docs/design.md §20): the tarball's credential and slots.
    const beside = parseIndexPath(pathOnly.slice(ARTIFACTS_PREFIX.length));
    if (beside?.kind === 'pack' ? req.method !== 'POST' : false) {
      res.setHeader('allow', 'POST');
      return sendJson(res, errorAnswer(405, 'NOT_FOUND', 'a pack takes POST'));
    }
    if (beside?.kind !== 'pack' && req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return sendJson(res, errorAnswer(405, 'NOT_FOUND', 'artifacts take GET'));
    }
    const who = await identifyDownloader(req, store, downloads.auth, () => store.read((tx) => tx.now()));
    if (!who.ok) return sendJson(res, errorAnswer(who.status, who.code, who.message));
    if (who.who.kind === 'anonymous' && downloads.slots.anonymousMax === 0) {
      return sendJson(res, errorAnswer(401, 'UNAUTHENTICATED', 'this control plane sends artifacts only to enrolled nodes (a Steward-Node credential) and operators (a bearer token): --anonymous-downloads 0'));
    }
    if (beside) {
      const slot = downloads.slots.take(who.who);
      if ('busy' in slot) {
        res.setHeader('retry-after', String(DOWNLOAD_RETRY_AFTER_S));
        return sendJson(res, errorAnswer(503, 'BUSY', `this instance has no download slot free; retry after ${DOWNLOAD_RETRY_AFTER_S} s`));
      }
      res.once('close', slot.release);
      if (beside.kind === 'pack') return sendPack(store, opts.artifactsDir, beside, req, res);
      if (beside.kind === 'patch' || beside.kind === 'index-delta') return sendPatch(store, opts.artifactsDir, { ...beside, kind: beside.kind, from: beside.from as string }, req, res, req.method === 'HEAD', downloads.minRate);
      return sendIndex(store, opts.artifactsDir, beside, req, res, req.method === 'HEAD');
    }
    return sendArtifact(store, opts.artifactsDir, pathOnly.slice(ARTIFACTS_PREFIX.length), req, res, req.method === 'HEAD', downloads.slots, who.who, downloads.minRate);
  }
  if (opts.admin && (await opts.admin.handle(req, res))) return;
  return sendJson(res, errorAnswer(404, 'NOT_FOUND', `no such path ${JSON.stringify(pathOnly.slice(0, 200))}`));
}

// A 200 heartbeat answer with the receipt and heartbeat versions this control plane accepts, each
// for an agent that asked (RECEIPT_VERSIONS_HEADER, HEARTBEAT_VERSIONS_HEADER, docs/design.md §16); any
// other answer as it is.
export function withAcceptedVersions<A extends { status: number; body: unknown }>(req: http.IncomingMessage, answer: A): A {
  if (answer.status !== 200) return answer;
  // Only what the agent offered too: an agent relays only payloads it reads itself (one that offers
  // "1, 2" is told 1 and 2, though this control plane takes 3).
  const offered = req.headers[RECEIPT_VERSIONS_HEADER];
  const both = offered === undefined ? [] : (RECEIPT_VERSIONS as readonly number[]).filter((v) => v === 1 || parseOfferedVersions(offered).includes(v));
  const receipts = offered !== undefined ? { receiptVersions: both } : {};
  // An agent that relays v3 is one that reads a desired entry's `watchMs`; to any other it is not sent.
  const body = answer.body as { desired?: Array<Record<string, unknown>> };
  if (!both.includes(3) && Array.isArray(body.desired)) {
    answer = { ...answer, body: { ...body, desired: body.desired.map(({ watchMs: _w, ...rest }) => rest) } };
  }
  // Optional desired-entry fields go only to an agent that said it reads them (DESIRED_FIELDS_HEADER):
  // to any other the entry goes without them. Without `downgrade` its host refuses the downgrade
  // as before; without `fetchUntil` its helper tries a download once, as before; without
  // `indexedManifest` its helper stages from the tarball, as before (docs/design.md §20.2).
  const fields = parseDesiredFields(req.headers[DESIRED_FIELDS_HEADER]);
  const desired = (answer.body as { desired?: Array<Record<string, unknown>> }).desired;
  const drop = (['downgrade', 'fetchUntil', 'indexedManifest'] as const).filter((f) => !fields.includes(f));
  if (drop.length > 0 && Array.isArray(desired) && desired.some((d) => drop.some((f) => f in d))) {
    answer = { ...answer, body: { ...(answer.body as object), desired: desired.map((d) => Object.fromEntries(Object.entries(d).filter(([k]) => !(drop as readonly string[]).includes(k)))) } };
  }
  // A rollback entry (target revert) only to an agent that reads it; another never sees it, and
  // the attempt ends by its verdict timeout.
  const after = answer.body as { desired?: Array<Record<string, unknown>> };
  if (!fields.includes('rollback') && Array.isArray(after.desired) && after.desired.some((d) => d.rollback !== undefined)) {
    answer = { ...answer, body: { ...after, desired: after.desired.filter((d) => d.rollback === undefined) } };
  }
  const heartbeats = req.headers[HEARTBEAT_VERSIONS_HEADER] !== undefined ? { heartbeatVersions: [...HEARTBEAT_VERSIONS] } : {};
  return { ...answer, body: { ...(answer.body as object), ...receipts, ...heartbeats } };
}
