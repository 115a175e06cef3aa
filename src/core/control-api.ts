// The HTTP contract between steward-agent (and `agentctl enroll`) and a control plane
// (docs/design.md §6, §9). Shared by both sides so they cannot drift; docs/protocol.md documents it.
//
//   POST /v1/enroll     body: EnrollBody: an envelope (node key, domain steward-enroll-v1) of
//                       EnrollPayload, plus helperSig (helper key, steward-enroll-helper-v1)
//                       200 EnrollAnswer | 400 BAD_BODY | 401 TOKEN_INVALID / BAD_SIGNATURE
//   POST /v1/heartbeat  body: envelope (node key, domain steward-heartbeat-v1) of HeartbeatPayload
//                       200 HeartbeatAnswer | 400 BAD_BODY / RECEIPT_REJECTED
//                       | 401 UNKNOWN_NODE / BAD_SIGNATURE | 409 SEQ_REPLAYED {lastSeq}
//                       | 422 CLOCK_SKEW {serverTime}
//   GET  /v1/artifacts/<app>/<version>.tgz   the release tarball, when the catalog keeps it
//   GET  /v1/wait?timeout=S   Authorization: Steward-Node (node key, domain steward-wait-v1)
//                       200 {woken: true|false} when the node's desired set changed or S passed
//                       | 400 BAD_QUERY | 401 UNAUTHENTICATED | 429 TOO_MANY_WAITS | 503 BUSY
//   GET  /v1/trust/bundle?root=N   Authorization: Steward-Node (as /v1/wait)
//                       200 TrustBundle: the fleet's TUF metadata a host trusting root N needs
//                       (docs/design.md §21.2) | 400 BAD_QUERY | 401 UNAUTHENTICATED
//                       | 404 NOT_FOUND (the fleet has no TUF repository yet)
//
// Every error answer is `{error: {code, message}}`, plus `lastSeq` (409) or `serverTime` (422).
import { receiptVersionListSchema } from './control-plane-accepts.js';
import * as z from './zod-mini.js';
import { CLAIMABLE_KEY_RE, LABEL_KEY_RE, LABEL_VALUE_RE, MAX_LABELS } from './labels.js';
import { appNameSchema, attemptIdSchema, epochMsSchema, intSchema, stringSchema, versionSchema } from './names.js';
import { HOSTNAME_RE, HOSTNAME_RULE } from './name-checks.js';
import { envelopeSchema } from './release-schemas.js';

export { ARTIFACTS_PREFIX, ENROLL_PATH, HEARTBEAT_PATH, MAX_BODY_BYTES, WAIT_PATH } from './control-paths.js';

const heartbeatSecondsSchema = intSchema(1, 86_400);
const pemSchema = stringSchema(1, 4096);

// The labels a node proposes at enrollment (docs/design.md §11): kept under `claimed.<key>`, so a key
// leaves room for that prefix. Absent for a node that proposes none (what older agents send).
const labelsOf = (keyRe: RegExp) =>
  z.record(z.string().check(z.regex(keyRe, `label keys match ${keyRe.source}`)), z.string().check(z.regex(LABEL_VALUE_RE, `label values match ${LABEL_VALUE_RE.source}`))).check(
    z.refine((l) => Object.keys(l).length <= MAX_LABELS, { message: `at most ${MAX_LABELS} labels` }),
  );
export const claimedLabelsSchema = labelsOf(CLAIMABLE_KEY_RE);
// A node's or a token's labels as steward-control keeps them (docs/design.md §11).
export const labelsSchema = labelsOf(LABEL_KEY_RE);

// What a node signs with its fresh node key to enroll. `nodePublicKey` must verify the
// envelope's signature; `helperPublicKey` is the key every receipt of this node must verify
// under from now on. Tokens are single use and expire.
export const enrollPayloadSchema = z.strictObject({
  v: z.literal(1),
  token: stringSchema(16, 256),
  nodePublicKey: pemSchema,
  helperPublicKey: pemSchema,
  hostname: z.string().check(z.regex(HOSTNAME_RE, `hostname must be ${HOSTNAME_RULE}`)),
  sentAt: epochMsSchema,
  labels: z.optional(claimedLabelsSchema),
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
  helperSig: z.optional(stringSchema(1, 256)),
});
export type EnrollBody = z.infer<typeof enrollBodySchema>;

export const enrollAnswerSchema = z.strictObject({
  nodeId: stringSchema(1, 128),
  heartbeatSeconds: heartbeatSecondsSchema,
});
export type EnrollAnswer = z.infer<typeof enrollAnswerSchema>;

// One version the control plane wants on this node, under the attemptId a rollout issued.
// The agent hands it to the helper once; the helper verifies the manifest itself. `notAfter`
// (a run with windows, docs/design.md §11): the window's end; no update may start after it (the agent
// does not hand it on, the helper refuses it WINDOW_CLOSED). Absent for a run without windows,
// so an agent from before windows still reads the answers of such runs.
export const desiredEntrySchema = z.strictObject({
  app: appNameSchema,
  version: versionSchema,
  attemptId: attemptIdSchema,
  manifest: envelopeSchema,
  notAfter: z.optional(epochMsSchema),
  // The watch window after activation (docs/design.md §17): the run's bake. Sent only to an agent
  // that offers receipt payload v3 (RECEIPT_VERSIONS_HEADER): earlier agents' answers are strict.
  watchMs: z.optional(intSchema(0, 86_400_000)),
  // A signed downgrade authorization for this app and version (docs/design.md §18), when an
  // operator made one: the helper checks it against its own trusted keys. Sent only to an agent
  // that names it in DESIRED_FIELDS_HEADER: earlier agents' answers are strict.
  downgrade: z.optional(envelopeSchema),
  // Until when the helper tries a failed download again (docs/design.md §18). Sent only to an agent
  // that lists it in DESIRED_FIELDS_HEADER: earlier agents' answers are strict.
  fetchUntil: z.optional(epochMsSchema),
  // A `target revert` (docs/design.md §18): the helper's rollback to its `previous` (which is
  // `version`, the version it ran before), not an update; no downgrade authorization is needed.
  // Sent only to an agent that offers it (DESIRED_FIELDS_HEADER): earlier agents' answers are strict.
  rollback: z.optional(z.literal(true)),
  // The same release's manifest signed with its file index (docs/design.md §20.2), when the
  // catalog keeps one: the helper stages from it, fetching only the files it lacks. Sent only to
  // an agent that names it in DESIRED_FIELDS_HEADER: earlier agents' answers are strict.
  indexedManifest: z.optional(envelopeSchema),
  // The director's word (docs/design.md §21): an envelope under `steward-directive-v1`, signed by
  // the online director key the fleet's TUF root names, for this node, app, version and attemptId.
  // A host whose TUF root is set installs nothing without one. Sent only to an agent that names it
  // in DESIRED_FIELDS_HEADER: earlier agents' answers are strict.
  directive: z.optional(envelopeSchema),
});
export type DesiredEntry = z.infer<typeof desiredEntrySchema>;

const seqSchema = intSchema(1);

// docs/design.md §16: an agent that can relay receipt payloads above v1 says so with this request header
// (the versions it relays, `1, 2`); a control plane then lists in the heartbeat answer the receipt
// versions it accepts (`receiptVersions`). A header, not a payload or answer field: the heartbeat
// payload and answer of earlier stewards are strict, so a field would be refused by one of them;
// a header is ignored by a control plane that does not know it, and the answer carries the new
// field only to an agent that asked for it.
export const RECEIPT_VERSIONS_HEADER = 'steward-receipt-versions';
// The same for the heartbeat payload's own versions (`1, 2`): answered with `heartbeatVersions`.
export const HEARTBEAT_VERSIONS_HEADER = 'steward-heartbeat-versions';
// The optional desired-entry fields an agent reads beyond those the receipt versions imply
// (`downgrade`, `fetchUntil`, `rollback`, `indexedManifest`, `directive`), and the answer's own `trust`,
// comma-separated: a control plane sends such a field only to an agent that lists it.
export const DESIRED_FIELDS_HEADER = 'steward-desired-fields';
// The fields this header governs, and those this agent reads.
export const OPTIONAL_DESIRED_FIELDS = ['downgrade', 'fetchUntil', 'rollback', 'indexedManifest', 'directive', 'trust'] as const;

// The fields an agent listed in DESIRED_FIELDS_HEADER that this steward knows; anything else is ignored.
export function parseDesiredFields(header: string | string[] | undefined): string[] {
  const text = Array.isArray(header) ? header.join(',') : (header ?? '');
  const known = OPTIONAL_DESIRED_FIELDS as readonly string[];
  return [...new Set(text.split(',').map((s) => s.trim()).filter((s) => known.includes(s)))];
}

// docs/design.md §18, wake-ups: an agent that can hold its heartbeat says so, and for how long, with
// this request header: `30` (the first heartbeat, which learns the desired set's digest) or
// `30; seen=<digest>` (the digest of the desired set it last heard). A control plane that knows it
// answers at once when the node's desired set is not the one it has seen, and otherwise holds the
// answer until that set changes or the seconds pass; the answer then carries `desiredDigest` and
// `held`. One that does not know it answers at once without them, and the agent keeps its plain
// heartbeats and waits (GET /v1/wait).
export const HOLD_HEADER = 'steward-hold';
export const MAX_HOLD_SECONDS = 60;
const DIGEST_RE = /^[0-9a-f]{32}$/;
// How a held heartbeat ended: its time ran out ('timeout'), the node's desired set changed while it
// was held ('woken', the answer carries the new set), it was not held because the set differs from
// the one the agent has seen ('changed'), because the instance holds its most ('busy'), or because
// the instance is shutting down ('closing').
export const HOLD_ENDS = ['timeout', 'woken', 'changed', 'busy', 'closing'] as const;
export type HoldEnd = (typeof HOLD_ENDS)[number];

export interface HoldAsk {
  seconds: number;
  seen: string | null;
}

// The hold an agent asked for, or null when the header is absent or not the contract's (the
// heartbeat is then answered at once, as to an agent that asked none).
export function parseHoldHeader(header: string | string[] | undefined): HoldAsk | null {
  if (typeof header !== 'string' || header.length > 100) return null;
  const m = /^([0-9]{1,2})(?:; ?seen=([0-9a-f]{32}))?$/.exec(header.trim());
  if (!m) return null;
  const seconds = Number(m[1]);
  if (seconds < 1 || seconds > MAX_HOLD_SECONDS) return null;
  return { seconds, seen: m[2] ?? null };
}

export function formatHoldHeader(ask: HoldAsk): string {
  return ask.seen === null ? String(ask.seconds) : `${ask.seconds}; seen=${ask.seen}`;
}

export const heartbeatAnswerSchema = z.strictObject({
  // Receipt seqs the control plane has stored (now or before); the agent drops them from its outbox.
  ackedSeqs: z.array(seqSchema).check(z.maxLength(4096)),
  desired: z.array(desiredEntrySchema).check(z.maxLength(256)),
  heartbeatSeconds: heartbeatSecondsSchema,
  // The receipt payload versions the control plane accepts (absent: 1 only), given to an agent
  // that sent RECEIPT_VERSIONS_HEADER.
  receiptVersions: z.optional(receiptVersionListSchema),
  // The heartbeat payload versions it accepts (absent: 1 only), given to an agent that sent
  // HEARTBEAT_VERSIONS_HEADER.
  heartbeatVersions: z.optional(receiptVersionListSchema),
  // Given to an agent that sent HOLD_HEADER: the digest of `desired` as answered (its next
  // heartbeat's `seen`), and how the hold ended.
  desiredDigest: z.optional(z.string().check(z.regex(DIGEST_RE, '32 lowercase hex digits'))),
  held: z.optional(z.enum(HOLD_ENDS)),
  // The newest versions of the fleet's TUF root and timestamp (docs/design.md §21.2), when it has a
  // TUF repository: an agent whose helper trusts older ones fetches GET /v1/trust/bundle and hands
  // it to the helper. Sent only to an agent that names `trust` in DESIRED_FIELDS_HEADER.
  trust: z.optional(z.strictObject({ rootVersion: intSchema(1), timestampVersion: intSchema(1) })),
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
  // Artifacts: a Range outside the tarball (416); every download slot of the instance taken (503).
  'BAD_RANGE',
  'BUSY',
  // Artifacts: a credential that does not hold (401), an operator token over plain http from
  // another host (403); server/download-access.ts.
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'INTERNAL',
  // Wake-up waits (wakeups/wait-route.ts): a query that is not `timeout=1..60` (400); more waits
  // of one node than it may hold at once (429).
  'BAD_QUERY',
  'TOO_MANY_WAITS',
] as const;

// A TUF metadata file's name as a client fetches it with consistent snapshots (docs/design.md §21.1):
// `<v>.root.json`, `timestamp.json`, `<v>.snapshot.json`, `<v>.targets.json`, `<v>.app.<name>.json`.
export const TRUST_FILE_NAME_RE = /^(?:[1-9][0-9]{0,15}\.(?:root|snapshot|targets|app\.[a-z0-9][a-z0-9_-]{0,62})|timestamp)\.json$/;
// At most this many bytes of metadata in one bundle, base64 included (an agent reads no more).
export const MAX_TRUST_BUNDLE_BYTES = 8 * 1024 * 1024;

// The answer of `GET /v1/trust/bundle?root=N` (docs/design.md §21.2): every root after N up to the
// newest, the newest timestamp, the snapshot it names, the top-level targets and every app's
// delegated targets the snapshot names, each as the exact bytes the control plane stores (base64).
// Nothing in it is trusted for being here: the helper verifies it all from the root it holds.
export const trustBundleSchema = z.strictObject({
  v: z.literal(1),
  files: z.record(z.string().check(z.regex(TRUST_FILE_NAME_RE, 'a TUF metadata file name')), z.string().check(z.maxLength(MAX_TRUST_BUNDLE_BYTES))),
});
export type TrustBundle = z.infer<typeof trustBundleSchema>;

// The answer of `GET /v1/wait`: `woken` when the node's desired set changed (heartbeat now),
// false when the wait's time ran out.
export const waitAnswerSchema = z.object({ woken: z.boolean() });
export type ControlErrorCode = (typeof CONTROL_ERROR_CODES)[number];

export const errorAnswerSchema = z.object({
  error: z.object({ code: stringSchema(0, 64), message: stringSchema(0, 4096) }),
  lastSeq: z.optional(intSchema(0)),
  serverTime: z.optional(epochMsSchema),
});
export type ErrorAnswer = z.infer<typeof errorAnswerSchema>;
