// `GET /v1/wait?timeout=S` (docs/protocol.md): a node's wake-up long poll, answered
// `{woken: true}` as soon as its desired set changes (wait-registry.ts) and `{woken: false}` after
// S seconds (1 to 60, default 60). Only an enrolled node holds one, for itself: the request carries
// its Steward-Node credential signed under `steward-wait-v1` (platform/wait-auth.ts), checked
// against its key in the store before anything is held, so an anonymous or forged wait costs one
// answer and holds nothing, and no node learns anything of another's.
import type http from 'node:http';
import { errorAnswer, type Answer } from '../server/answer.js';
import { IDLE_SOCKET_MS } from '../server/listen.js';
import { sendJson } from '../server/send.js';
import { DOWNLOAD_AUTH_SCHEME, parseDownloadAuthorization } from '../../platform/download-auth.js';
import { parsePublicKey } from '../../platform/keys.js';
import { logger } from '../../platform/log.js';
import { checkWaitClaim } from '../../platform/wait-auth.js';
import type { ControlStore } from '../store/store.js';
import { MAX_WAIT_SECONDS, type WaitRegistry } from './wait-registry.js';

const log = logger('control:wait');

// What a full instance tells a node to wait before it holds a wait here again.
const FULL_RETRY_AFTER_S = 60;
// A held wait's socket may be idle this much longer than the wait (the listener's idle limit is 60 s).
const SOCKET_SLACK_MS = 15_000;

// The wait's length in ms from its query, or why the query is refused.
export function parseWaitQuery(rawUrl: string): { ok: true; ms: number } | { ok: false; message: string } {
  const q = rawUrl.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : rawUrl.slice(q + 1));
  const given = params.getAll('timeout');
  if (given.length === 0) return { ok: true, ms: MAX_WAIT_SECONDS * 1000 };
  const text = given[0] as string;
  if (given.length > 1 || !/^[0-9]{1,2}$/.test(text) || Number(text) < 1 || Number(text) > MAX_WAIT_SECONDS) {
    return { ok: false, message: `timeout must be given once, as whole seconds from 1 to ${MAX_WAIT_SECONDS}; got ${JSON.stringify(given.join(',').slice(0, 40))}` };
  }
  return { ok: true, ms: Number(text) * 1000 };
}

// The node a wait's Authorization header proves, or the 401 that refuses it.
export async function waitingNode(header: string | undefined, store: ControlStore): Promise<{ ok: true; nodeId: string } | { ok: false; answer: Answer }> {
  const refuse = (message: string) => ({ ok: false as const, answer: errorAnswer(401, 'UNAUTHENTICATED', message) });
  if (header === undefined) return refuse(`a wait takes the node's ${DOWNLOAD_AUTH_SCHEME} credential, signed with its node key under steward-wait-v1 (docs/protocol.md)`);
  const claim = parseDownloadAuthorization(header);
  if (!claim) return refuse(`the Authorization header is not a well-formed ${DOWNLOAD_AUTH_SCHEME} credential: ${DOWNLOAD_AUTH_SCHEME} <nodeId> <expiresAt ms> <base64 signature>`);
  const { pem, now } = await store.read(async (tx) => ({ pem: await tx.nodes.key(claim.nodeId), now: await tx.now() }));
  if (pem === null) return refuse(`node ${claim.nodeId} is not enrolled`);
  let why: string | null;
  try {
    why = checkWaitClaim(claim, parsePublicKey(pem), now);
  } catch {
    why = 'the node key in the store cannot be read';
  }
  if (why) return refuse(`the ${DOWNLOAD_AUTH_SCHEME} credential of node ${claim.nodeId} does not hold for a wait: ${why}`);
  return { ok: true, nodeId: claim.nodeId };
}

// Answers one request to WAIT_PATH.
export async function answerWait(req: http.IncomingMessage, res: http.ServerResponse, store: ControlStore, waits: WaitRegistry): Promise<void> {
  if (req.method !== 'GET') {
    res.setHeader('allow', 'GET');
    return sendJson(res, errorAnswer(405, 'NOT_FOUND', '/v1/wait takes GET'));
  }
  const query = parseWaitQuery(req.url ?? '');
  if (!query.ok) return sendJson(res, errorAnswer(400, 'BAD_QUERY', query.message));
  const who = await waitingNode(req.headers.authorization, store);
  if (!who.ok) return sendJson(res, who.answer);
  const { nodeId } = who;
  const hold = waits.hold(nodeId, query.ms);
  if (!hold.ok) {
    if (hold.busy === 'node') {
      log('wait refused node=%s: it holds %d already', nodeId, waits.perNode);
      res.setHeader('retry-after', String(query.ms / 1000));
      return sendJson(res, errorAnswer(429, 'TOO_MANY_WAITS', `node ${nodeId} holds ${waits.perNode} waits on this instance already; one at a time is enough`));
    }
    log('wait refused node=%s: the instance holds %d waits', nodeId, waits.maxWaits);
    res.setHeader('retry-after', String(FULL_RETRY_AFTER_S));
    return sendJson(res, errorAnswer(503, 'BUSY', `this instance holds its most waits (${waits.maxWaits}); heartbeat as usual and wait again later`));
  }
  const socket = req.socket;
  // Why: the client that went away gives its slot back at once.
  const gone = () => hold.wait.cancel();
  res.once('close', gone);
  socket.setTimeout(query.ms + SOCKET_SLACK_MS);
  const how = await hold.wait.ended;
  res.off('close', gone);
  if (res.destroyed || res.writableEnded) return;
  socket.setTimeout(IDLE_SOCKET_MS);
  if (how === 'closing') {
    res.setHeader('retry-after', '1');
    return sendJson(res, errorAnswer(503, 'BUSY', 'this instance is shutting down; wait on another'), true);
  }
  if (how === 'woken') log('wait answered node=%s: its desired set changed', nodeId);
  return sendJson(res, { status: 200, body: { woken: how === 'woken' } });
}
