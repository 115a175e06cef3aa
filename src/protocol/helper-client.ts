// The local API as its callers see it (docs/design.md §7), one method per op with its request's fields
// in and its answer out, as tailscale's client/local: no caller writes a request line or casts
// an answer. The agent and every agentctl command talk to the helper through it.
import type { AnswerOf } from './answers.js';
import type { CallOptions } from './client.js';
import { PROTOCOL_VERSION, type OpName } from './ops.js';
import type { FieldsOf } from './requests.js';

// Sends one request line and resolves with the final line's `result` (callHelper, or a
// wrapper of it that words its errors), throwing StewardError as callHelper does.
export type SendRequest = (request: object, opts?: CallOptions) => Promise<unknown>;

// One op's method; its fields may be left out when the op needs none (status, receipts).
type Method<K extends OpName> = (
  ...args: {} extends FieldsOf<K> ? [fields?: FieldsOf<K>, opts?: CallOptions] : [fields: FieldsOf<K>, opts?: CallOptions]
) => Promise<AnswerOf<K>>;

export interface HelperClient {
  status: Method<'status'>;
  receipts: Method<'receipts'>;
  releases: Method<'releases'>;
  stage: Method<'stage'>;
  update: Method<'update'>;
  rollback: Method<'rollback'>;
  recover: Method<'recover'>;
  start: Method<'start'>;
  stop: Method<'stop'>;
  restart: Method<'restart'>;
  prune: Method<'prune'>;
  verify: Method<'verify'>;
  releaseHold: Method<'release-hold'>;
  hold: Method<'hold'>;
  agentConfirm: Method<'agent-confirm'>;
  trustRefresh: Method<'trust-refresh'>;
  trustSetRoot: Method<'trust-set-root'>;
}

// A client whose requests go through `send`, numbered from 1.
export function helperClient(send: SendRequest): HelperClient {
  let id = 0;
  const method = <K extends OpName>(op: K): Method<K> =>
    // The answer is taken as its op's: callHelper checked the line's frame, and the helper is
    // the one peer this client trusts (root owns both sockets).
    ((fields?: FieldsOf<K>, opts?: CallOptions) => send({ v: PROTOCOL_VERSION, id: ++id, op, ...fields }, opts) as Promise<AnswerOf<K>>) as Method<K>;
  return {
    status: method('status'),
    receipts: method('receipts'),
    releases: method('releases'),
    stage: method('stage'),
    update: method('update'),
    rollback: method('rollback'),
    recover: method('recover'),
    start: method('start'),
    stop: method('stop'),
    restart: method('restart'),
    prune: method('prune'),
    verify: method('verify'),
    releaseHold: method('release-hold'),
    hold: method('hold'),
    agentConfirm: method('agent-confirm'),
    trustRefresh: method('trust-refresh'),
    trustSetRoot: method('trust-set-root'),
  };
}
