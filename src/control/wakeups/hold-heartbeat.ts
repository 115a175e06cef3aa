// A held heartbeat (docs/design.md §18, wake-ups; docs/protocol.md): the heartbeat is the node's
// long poll, so that a quiet node sends one request per interval. The heartbeat is recorded and
// committed first, as any other; only its answer waits. It is sent at once when the node's desired
// set is not the one the agent says it has seen (`changed`), and otherwise when that set changes
// (`woken`, with the set read afresh), when the asked seconds pass (`timeout`), or when the instance
// shuts down (`closing`). A hold takes a slot of the instance's wait registry, as a GET /v1/wait
// does; an instance holding its most answers at once (`busy`), and the agent sleeps its interval.
import { createHash } from 'node:crypto';
import type http from 'node:http';
import { canonicalJson } from '../../core/canonical-json.js';
import type { HoldAsk, HoldEnd } from '../../core/control-api.js';
import { logger } from '../../platform/log.js';
import type { Answer } from '../server/answer.js';
import { IDLE_SOCKET_MS } from '../server/listen.js';
import { sendJson } from '../server/send.js';
import type { WaitRegistry } from './wait-registry.js';

const log = logger('control:hold');

// A held answer's socket may be idle this much longer than the hold.
const SOCKET_SLACK_MS = 15_000;

// The digest an agent echoes as `seen`: of the desired entries exactly as answered to it, but
// for each entry's `directive` (docs/design.md §21.2), which is signed afresh for every answer
// (its issuedAt is the answer's time): the same set with a newer directive is the same set.
export function desiredDigest(desired: unknown): string {
  const entries = Array.isArray(desired) ? desired.map((d) => (d !== null && typeof d === 'object' && 'directive' in d ? (({ directive: _d, ...rest }) => rest)(d as Record<string, unknown>) : d)) : desired;
  return createHash('sha256').update(canonicalJson(entries ?? [])).digest('hex').slice(0, 32);
}

// A 200 answer with the digest of its desired set and how the hold ended.
export function withHold(answer: Answer, held: HoldEnd): Answer {
  const body = answer.body as { desired?: unknown };
  return { status: 200, body: { ...body, desiredDigest: desiredDigest(body.desired), held } };
}

// The nodeId of a heartbeat body its control plane answered 200, so already verified; null for a
// body that does not parse (never the case after a 200).
export function heartbeatNodeId(body: Buffer): string | null {
  try {
    const envelope = JSON.parse(body.toString('utf8')) as { payload?: unknown };
    if (typeof envelope.payload !== 'string') return null;
    const payload = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as { nodeId?: unknown };
    return typeof payload.nodeId === 'string' ? payload.nodeId : null;
  } catch {
    return null;
  }
}

export interface HeldHeartbeat {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  nodeId: string;
  ask: HoldAsk;
  // The answer as it would go now (the agent's optional fields already applied).
  answer: Answer;
  // The answer made again with the node's desired set read afresh (after a wake).
  reread(): Promise<Answer>;
  waits: WaitRegistry;
}

// Sends `h.answer` at once or once its hold ends, as the module comment says.
export async function answerHeld(h: HeldHeartbeat): Promise<void> {
  const { res, nodeId } = h;
  if (desiredDigest((h.answer.body as { desired?: unknown }).desired) !== h.ask.seen) return sendJson(res, withHold(h.answer, 'changed'));
  const hold = h.waits.hold(nodeId, h.ask.seconds * 1000);
  if (!hold.ok) {
    log('heartbeat of node=%s answered at once: %s', nodeId, hold.busy === 'full' ? `the instance holds its most (${h.waits.maxWaits})` : `it holds ${h.waits.perNode} already`);
    return sendJson(res, withHold(h.answer, 'busy'));
  }
  const socket = h.req.socket;
  // Why: the client that went away gives its slot back at once.
  const gone = () => hold.wait.cancel();
  res.once('close', gone);
  socket.setTimeout(h.ask.seconds * 1000 + SOCKET_SLACK_MS);
  const how = await hold.wait.ended;
  res.off('close', gone);
  if (res.destroyed || res.writableEnded) return;
  socket.setTimeout(IDLE_SOCKET_MS);
  if (how !== 'woken') return sendJson(res, withHold(h.answer, how), how === 'closing');
  let fresh: Answer;
  try {
    fresh = await h.reread();
  } catch (err) {
    // The agent hears 'woken' with the set it has, and asks again at once: the next answer reads it.
    log('heartbeat of node=%s woken, but its desired set could not be read again: %s', nodeId, (err as Error).message);
    fresh = h.answer;
  }
  if (res.destroyed || res.writableEnded) return;
  log('held heartbeat of node=%s answered: its desired set changed', nodeId);
  return sendJson(res, withHold(fresh, 'woken'));
}
