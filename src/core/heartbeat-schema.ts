import { z } from 'zod';
import { appNameSchema, epochMsSchema, versionSchema } from './names.js';
import { envelopeSchema } from './release-schemas.js';

import { MAX_HEARTBEAT_APPS, MAX_HEARTBEAT_RECEIPTS } from './heartbeat-limits.js';

export { MAX_HEARTBEAT_APPS, MAX_HEARTBEAT_RECEIPTS };

const seqSchema = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

// One app as the agent reports it. The supervisor part is the agent's report, not signed by
// the helper (DESIGN §6); `since` is when the supervisor entered `state`, null if never.
export const heartbeatAppSchema = z.strictObject({
  name: appNameSchema,
  current: versionSchema.nullable(),
  previous: versionSchema.nullable(),
  held: z.boolean(),
  blocked: z.boolean(),
  supervisor: z.strictObject({
    state: z.enum(['running', 'waiting', 'error', 'stopped']),
    pid: z.number().int().positive().max(2 ** 31 - 1).optional(),
    attempts: z.number().int().nonnegative().max(1_000_000),
    since: epochMsSchema.nullable(),
  }),
});
export type HeartbeatApp = z.infer<typeof heartbeatAppSchema>;

// The payload of a `POST /v1/heartbeat` envelope (DESIGN §6), signed by the node key.
// `receipts` are the helper's envelopes, relayed as they are; each is verified on its own.
export const heartbeatPayloadSchema = z
  .strictObject({
    v: z.literal(1),
    nodeId: z.string().min(1).max(128),
    seq: seqSchema,
    sentAt: epochMsSchema,
    bootId: z.string().min(1).max(128),
    agentVersion: versionSchema,
    apps: z.array(heartbeatAppSchema).max(MAX_HEARTBEAT_APPS),
    receipts: z.array(envelopeSchema).max(MAX_HEARTBEAT_RECEIPTS),
  })
  .refine((p) => new Set(p.apps.map((a) => a.name)).size === p.apps.length, {
    message: 'each app is reported once',
    path: ['apps'],
  });
export type HeartbeatPayload = z.infer<typeof heartbeatPayloadSchema>;
