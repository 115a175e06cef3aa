import { z } from './zod-mini.js';
import { appNameSchema, epochMsSchema, intSchema, versionSchema } from './names.js';
import { envelopeSchema } from './release-schemas.js';

import { MAX_HEARTBEAT_APPS, MAX_HEARTBEAT_RECEIPTS } from './heartbeat-limits.js';

export { MAX_HEARTBEAT_APPS, MAX_HEARTBEAT_RECEIPTS };

// One app as the agent reports it. The supervisor part is the agent's report, not signed by
// the helper (DESIGN §6); `since` is when the supervisor entered `state`, null if never.
export const heartbeatAppSchema = z.strictObject({
  name: appNameSchema,
  current: z.nullable(versionSchema),
  previous: z.nullable(versionSchema),
  held: z.boolean(),
  blocked: z.boolean(),
  supervisor: z.strictObject({
    state: z.enum(['running', 'waiting', 'error', 'stopped']),
    pid: z.optional(intSchema(1, 2 ** 31 - 1)),
    attempts: intSchema(0, 1_000_000),
    since: z.nullable(epochMsSchema),
  }),
});
export type HeartbeatApp = z.infer<typeof heartbeatAppSchema>;

// The payload of a `POST /v1/heartbeat` envelope (DESIGN §6), signed by the node key.
// `receipts` are the helper's envelopes, relayed as they are; each is verified on its own.
export const heartbeatPayloadSchema = z
  .strictObject({
    v: z.literal(1),
    nodeId: z.string().check(z.minLength(1), z.maxLength(128)),
    seq: intSchema(1),
    sentAt: epochMsSchema,
    bootId: z.string().check(z.minLength(1), z.maxLength(128)),
    agentVersion: versionSchema,
    apps: z.array(heartbeatAppSchema).check(z.maxLength(MAX_HEARTBEAT_APPS)),
    receipts: z.array(envelopeSchema).check(z.maxLength(MAX_HEARTBEAT_RECEIPTS)),
  })
  .check(
    z.refine((p) => new Set(p.apps.map((a) => a.name)).size === p.apps.length, {
      message: 'each app is reported once',
      path: ['apps'],
    }),
  );
export type HeartbeatPayload = z.infer<typeof heartbeatPayloadSchema>;
