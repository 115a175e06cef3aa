// The HTTP contract between steward-agent (and `agentctl enroll`) and a control plane
// (DESIGN §6, §9). Shared by both sides so they cannot drift; docs/protocol.md documents it.
//
//   POST /v1/enroll     body: EnrollBody: an envelope (node key, domain steward-enroll-v1) of
//                       EnrollPayload, plus helperSig (helper key, steward-enroll-helper-v1)
//                       200 EnrollAnswer | 400 BAD_BODY | 401 TOKEN_INVALID / BAD_SIGNATURE
//   POST /v1/heartbeat  body: envelope (node key, domain steward-heartbeat-v1) of HeartbeatPayload
//                       200 HeartbeatAnswer | 400 BAD_BODY / RECEIPT_REJECTED
//                       | 401 UNKNOWN_NODE / BAD_SIGNATURE | 409 SEQ_REPLAYED {lastSeq}
//                       | 422 CLOCK_SKEW {serverTime}
//   GET  /v1/artifacts/<app>/<version>.tgz   the release tarball, when the catalog keeps it
//
// Every error answer is `{error: {code, message}}`, plus `lastSeq` (409) or `serverTime` (422).
import { z } from 'zod';
import { CLAIMABLE_KEY_RE, LABEL_VALUE_RE, MAX_LABELS } from './labels.js';
import { appNameSchema, attemptIdSchema, epochMsSchema, versionSchema } from './names.js';
import { HOSTNAME_RE, HOSTNAME_RULE } from './name-checks.js';
import { envelopeSchema } from './release-schemas.js';

export { ARTIFACTS_PREFIX, ENROLL_PATH, HEARTBEAT_PATH, MAX_BODY_BYTES } from './control-paths.js';

const pemSchema = z.string().min(1).max(4096);

// The labels a node proposes at enrollment (DESIGN §11): kept under `claimed.<key>`, so a key
// leaves room for that prefix. Absent for a node that proposes none (what older agents send).
export const claimedLabelsSchema = z
  .record(z.string().regex(CLAIMABLE_KEY_RE), z.string().regex(LABEL_VALUE_RE))
  .refine((l) => Object.keys(l).length <= MAX_LABELS, { message: `at most ${MAX_LABELS} labels` });

// What a node signs with its fresh node key to enroll. `nodePublicKey` must verify the
// envelope's signature; `helperPublicKey` is the key every receipt of this node must verify
// under from now on. Tokens are single use and expire.
export const enrollPayloadSchema = z.strictObject({
  v: z.literal(1),
  token: z.string().min(16).max(256),
  nodePublicKey: pemSchema,
  helperPublicKey: pemSchema,
  hostname: z.string().regex(HOSTNAME_RE, `hostname must be ${HOSTNAME_RULE}`),
  sentAt: epochMsSchema,
  labels: claimedLabelsSchema.optional(),
});
export type EnrollPayload = z.infer<typeof enrollPayloadSchema>;

// The body of `POST /v1/enroll`: the node key's envelope of an EnrollPayload P, and `helperSig`,
// base64(Ed25519(helper key, utf8("steward-enroll-helper-v1\n") || P)) over the same bytes P.
// It proves the enrolling host holds the private half of `helperPublicKey`: without it a node
// could enroll with another node's helper public key and relay that node's receipts as its own.
// P holds the token and the node public key, so the proof enrolls that node key once, nothing
// else. `helperSig` is optional here only so that a control plane can name what an older
// agentctl's body lacks; enrollment refuses a body without it.
export const enrollBodySchema = z.strictObject({
  ...envelopeSchema.shape,
  helperSig: z.string().min(1).max(256).optional(),
});
export type EnrollBody = z.infer<typeof enrollBodySchema>;

export const enrollAnswerSchema = z.strictObject({
  nodeId: z.string().min(1).max(128),
  heartbeatSeconds: z.number().int().min(1).max(86_400),
});
export type EnrollAnswer = z.infer<typeof enrollAnswerSchema>;

// One version the control plane wants on this node, under the attemptId a rollout issued.
// The agent hands it to the helper once; the helper verifies the manifest itself. `notAfter`
// (a run with windows, DESIGN §11): the window's end; no update may start after it (the agent
// does not hand it on, the helper refuses it WINDOW_CLOSED). Absent for a run without windows,
// so an agent from before windows still reads the answers of such runs.
export const desiredEntrySchema = z.strictObject({
  app: appNameSchema,
  version: versionSchema,
  attemptId: attemptIdSchema,
  manifest: envelopeSchema,
  notAfter: epochMsSchema.optional(),
});
export type DesiredEntry = z.infer<typeof desiredEntrySchema>;

const seqSchema = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

export const heartbeatAnswerSchema = z.strictObject({
  // Receipt seqs the control plane has stored (now or before); the agent drops them from its outbox.
  ackedSeqs: z.array(seqSchema).max(4096),
  desired: z.array(desiredEntrySchema).max(256),
  heartbeatSeconds: z.number().int().min(1).max(86_400),
});
export type HeartbeatAnswer = z.infer<typeof heartbeatAnswerSchema>;

export const CONTROL_ERROR_CODES = [
  'BAD_BODY',
  'TOKEN_INVALID',
  'UNKNOWN_NODE',
  'BAD_SIGNATURE',
  'SEQ_REPLAYED',
  'CLOCK_SKEW',
  'RECEIPT_REJECTED',
  'NOT_FOUND',
  'INTERNAL',
] as const;
export type ControlErrorCode = (typeof CONTROL_ERROR_CODES)[number];

export const errorAnswerSchema = z.object({
  error: z.object({ code: z.string().max(64), message: z.string().max(4096) }),
  lastSeq: z.number().int().nonnegative().optional(),
  serverTime: epochMsSchema.optional(),
});
export type ErrorAnswer = z.infer<typeof errorAnswerSchema>;
