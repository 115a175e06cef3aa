import * as z from '../core/zod-mini.js';
import { PLAIN_TEXT_RE } from '../core/control-chars.js';
import { HOLD_FOR_MAX_MS, HOLD_FOR_MIN_MS, HOLD_REASON_MAX } from '../core/hold-limits.js';
import { MAX_CONTROL_PLANE_URLS } from '../core/control-plane-urls.js';
import { appNameSchema, attemptIdSchema, epochMsSchema, integritySchema, intSchema, versionSchema } from '../core/names.js';
import { envelopeSchema, type Envelope } from '../core/release-schemas.js';
import { MAX_TRUST_BUNDLE_BYTES, trustBundleSchema } from '../core/control-api.js';
import { idSchema } from './answer-schemas.js';
import { PROTOCOL_VERSION, type OpName } from './ops.js';

// The local API of docs/design.md §7: newline-delimited JSON, one request per connection,
// optionally followed by exactly `upload` raw bytes. The op names and limits are in ops.ts,
// the answer lines in answer-schemas.ts.
export { ADMIN_ONLY_OPS, ALL_OPS, HELPER_SOCK_OPS, MAX_REQUEST_LINE, PROTOCOL_VERSION, type OpName, type SocketKind } from './ops.js';
export { errorBodySchema, progressEventSchema, responseSchema, type ErrorBody, type ProgressEvent, type Response } from './answer-schemas.js';

// What every request has, whatever its op: checked before the op's own schema (a loose object:
// the other keys are the op's to check).
export const requestEnvelopeSchema = z.looseObject({
  v: z.literal(PROTOCOL_VERSION),
  id: idSchema,
  op: z.string().check(z.maxLength(64)),
});

const base = {
  v: z.literal(PROTOCOL_VERSION),
  id: idSchema,
};

// The byte sources of a stage or update request. Exactly one of `path` (admin.sock
// only), `upload` (bytes that follow the request line) or neither (the manifest's url).
const releaseSource = {
  app: appNameSchema,
  version: versionSchema,
  manifest: z.optional(envelopeSchema),
  // The same release's manifest signed with its file index (docs/design.md §20.2): verified as
  // `manifest` is and held to name the same bytes, then staged from. A helper from before it
  // refuses the key as a malformed request, and the agent asks again without it.
  indexedManifest: z.optional(envelopeSchema),
  integrity: z.optional(integritySchema),
  path: z.optional(z.string().check(z.minLength(1), z.maxLength(4096))),
  upload: z.optional(intSchema(0)),
  allowUnsigned: z.optional(z.boolean()),
  allowDowngrade: z.optional(z.boolean()),
  force: z.optional(z.boolean()),
  attemptId: z.optional(attemptIdSchema),
  // The end of the rollout window (docs/design.md §11): the helper refuses to start at or after it.
  notAfter: z.optional(epochMsSchema),
};

// Every request is a strict object: an unknown key is refused.
export const statusRequestSchema = z.strictObject({ ...base, op: z.literal('status'), app: z.optional(appNameSchema) });
export const releasesRequestSchema = z.strictObject({ ...base, op: z.literal('releases'), app: appNameSchema });
export const stageRequestSchema = z.strictObject({ ...base, op: z.literal('stage'), ...releaseSource });
export const receiptsRequestSchema = z.strictObject({ ...base, op: z.literal('receipts'), app: z.optional(appNameSchema) });

// Who the client says it is: kept so that older clients' requests parse, and ignored: a hold's
// `by` is the peer's credentials (docs/design.md §4). Text with control characters is refused.
// The `by` of the requests steward-agent makes for its control plane (desired entries): the
// helper puts no hold for what the control plane itself asked (ops/rollback.ts).
export const AGENT_BY = 'steward-agent';
const whoSchema = z.optional(z.string().check(z.maxLength(128), z.regex(PLAIN_TEXT_RE, 'no control characters')));

// The agent's credential for downloads from its control plane (platform/download-auth.ts): an
// Authorization header sent only to URLs of `origin`. Printable ASCII only (a header value).
const fetchAuthSchema = z.strictObject({
  origin: z.string().check(z.maxLength(512), z.regex(/^https?:\/\/[\x21-\x7e]+$/)),
  authorization: z.string().check(z.maxLength(1024), z.regex(/^[\x21-\x7e][\x20-\x7e]*$/)),
});

// The agent's control-plane URLs (docs/design.md §18): an artifact path is fetched from each in
// turn, and the credential of fetchAuth goes to each of their origins. http(s) only, printable.
const mirrorsSchema = z.array(z.string().check(z.maxLength(512), z.regex(/^https?:\/\/[\x21-\x7e]+$/))).check(z.maxLength(MAX_CONTROL_PLANE_URLS));

export const updateRequestSchema = z.strictObject({
  ...base,
  op: z.literal('update'),
  ...releaseSource,
  noWait: z.optional(z.boolean()),
  fetchAuth: z.optional(fetchAuthSchema),
  mirrors: z.optional(mirrorsSchema),
  // Until when a failed fetch is tried again (docs/design.md §18): the run's fetch deadline.
  fetchUntil: z.optional(epochMsSchema),
  by: whoSchema,
  // The watch window after `active` (docs/design.md §17) the control plane asks for (its run's
  // bake): over the release's health.watchMs.
  watchMs: z.optional(intSchema(0, 86_400_000)),
  // A signed downgrade authorization (docs/design.md §18): lets this update go below the app's
  // highest active version when it holds for exactly this app and version.
  downgrade: z.optional(envelopeSchema),
  // The desired entry's directive (docs/design.md §21): under TUF, the director's word that this
  // node runs this app's version for this attempt. A helper from before it refuses the key as a
  // malformed request, and the agent asks again without it.
  directive: z.optional(envelopeSchema),
  // Under TUF (docs/design.md §21.3): the control plane offered newer metadata than this helper
  // trusts and the agent could not fetch it (a slow, endless or failing GET /v1/trust/bundle):
  // why, in the agent's words. A refusal that newer metadata might have lifted (TRUST_UNSIGNED,
  // TRUST_EXPIRED, TRUST_NOT_DIRECTED) is then made FETCH_FAILED, the node's trouble, not the
  // release's; it never lets anything through. A helper from before it refuses the key, and the
  // agent asks again without it.
  trustFetchFailed: z.optional(z.string().check(z.minLength(1), z.maxLength(1024), z.regex(PLAIN_TEXT_RE, 'no control characters'))),
});
export const rollbackRequestSchema = z.strictObject({
  ...base,
  op: z.literal('rollback'),
  app: appNameSchema,
  to: z.optional(versionSchema),
  attemptId: z.optional(attemptIdSchema),
  noWait: z.optional(z.boolean()),
  by: whoSchema,
});
export const recoverRequestSchema = z.strictObject({
  ...base,
  op: z.literal('recover'),
  app: appNameSchema,
  to: z.optional(versionSchema),
  attemptId: z.optional(attemptIdSchema),
  by: whoSchema,
});
export const pruneRequestSchema = z.strictObject({
  ...base,
  op: z.literal('prune'),
  app: appNameSchema,
  keep: z.optional(intSchema(2, 100)),
});
// `verify` of one app, or of every app of the host config without `app` (docs/design.md §20).
export const verifyRequestSchema = z.strictObject({ ...base, op: z.literal('verify'), app: z.optional(appNameSchema) });
export const releaseHoldRequestSchema = z.strictObject({ ...base, op: z.literal('release-hold'), app: appNameSchema });
// The host's own hold (docs/design.md §18): the reason (the helper refuses a blank one too) and, for a
// hold that expires, how long from now it stands.
export const holdRequestSchema = z.strictObject({
  ...base,
  op: z.literal('hold'),
  app: appNameSchema,
  reason: z.string().check(z.minLength(1), z.maxLength(HOLD_REASON_MAX), z.regex(PLAIN_TEXT_RE, 'no control characters')),
  forMs: z.optional(intSchema(HOLD_FOR_MIN_MS, HOLD_FOR_MAX_MS)),
});

const runStateRequest = <T extends 'start' | 'stop' | 'restart'>(op: T) => z.strictObject({ ...base, op: z.literal(op), app: appNameSchema, by: whoSchema });
export const startRequestSchema = runStateRequest('start');
export const stopRequestSchema = runStateRequest('stop');
export const restartRequestSchema = runStateRequest('restart');

// What the new agent says of the first heartbeat the control plane answered 2xx since it started:
// its seq and its sentAt (the agent's clock, which is the helper's). Who sends it is the proof
// (the peer's pid); these two only bound it in time and go to the log.
export const agentConfirmRequestSchema = z.strictObject({ ...base, op: z.literal('agent-confirm'), seq: intSchema(1), sentAt: epochMsSchema });

// `trust-refresh` (helper.sock, docs/design.md §21): the fleet's TUF metadata, a TrustBundle, inline
// as `bundle` or (a bundle is up to MAX_TRUST_BUNDLE_BYTES, a request line at most 64 KiB) as
// the JSON of the bundle in `upload` bytes after the line; exactly one of them.
export const trustRefreshRequestSchema = z
  .strictObject({ ...base, op: z.literal('trust-refresh'), bundle: z.optional(trustBundleSchema), upload: z.optional(intSchema(1, MAX_TRUST_BUNDLE_BYTES + 1024)) })
  .check(z.refine((r) => (r.bundle === undefined) !== (r.upload === undefined), { message: 'a trust-refresh carries its bundle inline or as upload bytes, exactly one' }));
// `trust-set-root` (admin.sock, docs/design.md §21): the bytes of a TUF root metadata file, as upload bytes.
export const TRUST_ROOT_MAX_BYTES = 512 * 1024;
export const trustSetRootRequestSchema = z.strictObject({ ...base, op: z.literal('trust-set-root'), upload: intSchema(1, TRUST_ROOT_MAX_BYTES) });

export const requestSchemas = {
  'trust-refresh': trustRefreshRequestSchema,
  'trust-set-root': trustSetRootRequestSchema,
  start: startRequestSchema,
  stop: stopRequestSchema,
  restart: restartRequestSchema,
  update: updateRequestSchema,
  rollback: rollbackRequestSchema,
  recover: recoverRequestSchema,
  prune: pruneRequestSchema,
  verify: verifyRequestSchema,
  'release-hold': releaseHoldRequestSchema,
  hold: holdRequestSchema,
  status: statusRequestSchema,
  releases: releasesRequestSchema,
  stage: stageRequestSchema,
  receipts: receiptsRequestSchema,
  'agent-confirm': agentConfirmRequestSchema,
} as const satisfies Record<OpName, unknown>;

// The checked request of op `K`.
export type RequestOf<K extends OpName> = z.infer<(typeof requestSchemas)[K]>;
export type StatusRequest = RequestOf<'status'>;
export type ReleasesRequest = RequestOf<'releases'>;
export type StageRequest = RequestOf<'stage'>;
export type ReceiptsRequest = RequestOf<'receipts'>;
export type UpdateRequest = RequestOf<'update'>;
export type RollbackRequest = RequestOf<'rollback'>;
export type RecoverRequest = RequestOf<'recover'>;
export type PruneRequest = RequestOf<'prune'>;
export type VerifyRequest = RequestOf<'verify'>;
export type ReleaseHoldRequest = RequestOf<'release-hold'>;
export type HoldRequest = RequestOf<'hold'>;
export type AgentConfirmRequest = RequestOf<'agent-confirm'>;
export type TrustRefreshRequest = RequestOf<'trust-refresh'>;
export type TrustSetRootRequest = RequestOf<'trust-set-root'>;
export type RunStateRequest = RequestOf<'start'> | RequestOf<'stop'> | RequestOf<'restart'>;
export type Request =
  | RunStateRequest
  | StatusRequest
  | ReleasesRequest
  | StageRequest
  | ReceiptsRequest
  | UpdateRequest
  | RollbackRequest
  | RecoverRequest
  | PruneRequest
  | ReleaseHoldRequest
  | AgentConfirmRequest;

// What update, rollback and recover answer: the attempt's terminal outcome with its receipt,
// or, with noWait, that it was accepted.
export interface UpdateAnswer {
  attemptId: string;
  app: string;
  outcome: 'active' | 'rolled-back' | 'failed' | 'refused';
  fromVersion: string | null;
  targetVersion: string | null;
  reason?: { code: string; message: string };
  retryAfter?: number;
  logFile?: string;
  receipt: Envelope | null;
  // True when answered from an earlier attempt's receipt (a retried attemptId).
  settled?: boolean;
  // How the release's bytes came (docs/design.md §20), when this attempt staged it: as in
  // StageResult; `via: 'staged'` when it was staged before (nothing fetched).
  transfer?: StageTransfer;
}

// The bytes a stage moved and reused (docs/design.md §20).
export interface StageTransfer {
  via: 'tarball' | 'objects' | 'staged';
  fetchedBytes: number;
  reusedBytes: number;
  // The static patch the stage tried (§20.5), when it tried one.
  patch?: { from: string; used: boolean; code?: string | null; message?: string };
}

export interface AcceptedAnswer {
  attemptId: string;
  app: string;
  accepted: true;
}

// What the stage op answers.
export interface StageResult {
  app: string;
  version: string;
  attemptId: string;
  reused: boolean;
  path: string;
  signed: boolean;
  keyId: string | null;
  tarballIntegrity: string;
  treeDigest: string;
  entries?: number;
  bytes?: number;
  // How the tree's bytes came (docs/design.md §20): `fetchedBytes` moved over the network or from
  // the caller (the tarball, or the index and pack), `reusedBytes` of the tree's files were objects
  // the host had already; `via` is `tarball` or `objects`. Absent from a helper before §20.
  fetchedBytes?: number;
  reusedBytes?: number;
  via?: 'tarball' | 'objects';
  // Why a release with a file index was staged from its tarball after all: a reason code (null
  // when more than half its bytes were missing) and a message.
  fallback?: { code: string | null; message: string };
  // The static patch the stage tried (docs/design.md §20.5): from which version, whether its
  // objects were used, and if not why (a reason code, null for "not offered", and a message);
  // the pack brought them then. Absent when no patch was tried.
  patch?: { from: string; used: boolean; code?: string | null; message?: string };
}
