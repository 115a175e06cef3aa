import { StewardError } from '../../core/errors.js';
import { mustParse } from '../../core/must-parse.js';
import { ALL_OPS, type OpName } from '../../protocol/ops.js';
import type { AnswerOf } from '../../protocol/answers.js';
import type { RequestOf } from '../../protocol/requests.js';
import { requestEnvelopeSchema, requestSchemas } from '../../protocol/schemas.js';
import type { Dispatch, OpContext } from './api-server.js';
import { checkSocketPolicy } from './socket-policy.js';

// Ops whose request may be followed by upload bytes.
const UPLOAD_OPS: readonly OpName[] = ['stage', 'update', 'trust-refresh', 'trust-set-root'];
// Ops that only read; every other op waits until start-up recovery is over (docs/design.md §4).
// agent-confirm writes nothing either, and recovery's own probe of steward-agent waits for it.
const READ_ONLY_OPS: readonly OpName[] = ['status', 'receipts', 'releases', 'agent-confirm'];

// The validated request a handler of `K` receives.
export type { RequestOf };
// A handler answers with a JSON-serializable result or throws a StewardError.
export type OpHandler<K extends OpName = OpName> = (request: RequestOf<K>, ctx: OpContext) => unknown;
// What makeDispatch takes: some ops (a test's few), each answering anything JSON can carry.
export type Handlers = { [K in OpName]?: OpHandler<K> };
// The helper's own table (handlers.ts): every op, each answering its op's answer (protocol/answers.ts).
export type OpHandlers = { [K in OpName]: (request: RequestOf<K>, ctx: OpContext) => AnswerOf<K> | Promise<AnswerOf<K>> };

export interface DispatchOptions {
  // True while start-up recovery runs: mutating ops are refused with RECOVERING.
  recovering?: () => boolean;
}

// Builds the Dispatch of the API server: checks the envelope, the op, the socket's
// policy and the op's schema, in that order, then calls the op's handler. A refused request is
// worded by the schema that refused it (field and rule).
export function makeDispatch(handlers: Handlers, opts: DispatchOptions = {}): Dispatch {
  return async (raw, ctx) => {
    const request = mustParse(requestEnvelopeSchema, raw, 'BAD_REQUEST', 'invalid request');
    const op = request.op;
    if (!(ALL_OPS as readonly string[]).includes(op)) {
      throw new StewardError('BAD_REQUEST', `unknown op ${JSON.stringify(op)}`);
    }
    const name = op as OpName;
    checkSocketPolicy(ctx.kind, name, request);
    const handler = handlers[name] as OpHandler | undefined;
    if (!handler) throw new StewardError('BAD_REQUEST', `op "${name}" not supported by this helper`);
    if (request.upload !== undefined && !UPLOAD_OPS.includes(name)) {
      throw new StewardError('BAD_REQUEST', `op "${name}" takes no upload`);
    }
    const parsed = mustParse<unknown>(requestSchemas[name], raw, 'BAD_REQUEST', `invalid ${name} request`);
    if (!READ_ONLY_OPS.includes(name) && opts.recovering?.()) {
      throw new StewardError('RECOVERING', `op "${name}" refused: the helper is still recovering after start; try again shortly`);
    }
    return handler(parsed as never, ctx);
  };
}
