import * as z from './zod-mini.js';
import { PLAIN_TEXT_RE } from './control-chars.js';
import { EXIT_REASONS } from './exit-reasons.js';
import { appNameSchema, attemptIdSchema, epochMsSchema, intSchema, versionSchema } from './names.js';
import { hasNul } from './nul.js';
import { envelopeSchema } from './release-schemas.js';

import { MAX_HEARTBEAT_APPS, MAX_HEARTBEAT_RECEIPTS } from './heartbeat-limits.js';

export { MAX_HEARTBEAT_APPS, MAX_HEARTBEAT_RECEIPTS };

// An ISO 8601 UTC time as Date#toISOString writes it.
const isoTimeSchema = z.string().check(
  z.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/, 'an ISO time like 2026-01-02T03:04:05.678Z'),
  z.refine((s) => Number.isFinite(Date.parse(s)), 'an ISO time that is a date'),
);
const countSchema = intSchema(0, 1_000_000_000);
// Whole numbers only: a heartbeat is signed as canonical JSON, which holds safe integers and no
// floats (docs/design.md §6). The agent floors CPU seconds and the scraped counters.
const scrapedSchema = intSchema(0, Number.MAX_SAFE_INTEGER);

// From v7 (docs/design.md §19, docs/protocol.md): an app's signals for canary analysis. Counters
// since `since` (the app's activation of its current release, or when the helper began counting); a
// new `since` is a reset, and requests/errors may go down when the app restarts (a reset too).
// `scrape.code` is one of docs/reason-codes.md's scrape codes, checked by shape only so that a
// newer agent's code is stored, not refused.
export const signalsSchema = z.strictObject({
  since: isoTimeSchema,
  restarts: countSchema,
  livenessFailures: countSchema,
  watchdogKills: countSchema,
  oomKills: countSchema,
  cpuSeconds: intSchema(0, 1_000_000_000_000),
  rssBytes: intSchema(0, Number.MAX_SAFE_INTEGER),
  requests: z.optional(scrapedSchema),
  errors: z.optional(scrapedSchema),
  scrape: z.optional(z.strictObject({ ok: z.boolean(), code: z.optional(z.string().check(z.regex(/^[A-Z][A-Z0-9_]{0,63}$/))), at: isoTimeSchema })),
});
export type AppSignals = z.infer<typeof signalsSchema>;

// One app as the agent reports it. The supervisor part is the agent's report, not signed by
// the helper (docs/design.md §6); `since` is when the supervisor entered `state`, null if never.
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
  // The app steward only, in heartbeats v2 (docs/design.md §14 step 5, §16): the committed version the
  // launcher set aside (FALLBACK) after `starts` starts that never got ready, or null. From v3,
  // `packageReverted`: the installed package's version whose trial did not commit (an older
  // steward runs than the package dpkg installed), or null.
  self: z.optional(
    z.strictObject({
      fallback: z.nullable(z.strictObject({ version: versionSchema, starts: intSchema(1, 1_000_000) })),
      packageReverted: z.optional(z.nullable(z.strictObject({ version: versionSchema }))),
    }),
  ),
  // From v4 (docs/design.md §17): the open watch window after the version's activation (the version
  // watched, when it ends, the exits heard in it and those it allows), or null; and how the app's
  // last process ended (the supervisor's record), or null.
  watch: z.optional(
    z.nullable(z.strictObject({ version: versionSchema, until: epochMsSchema, restarts: intSchema(0, 1_000_000), maxRestarts: intSchema(0, 1000) })),
  ),
  // From v5: exits of its process since its last activation (docs/design.md §17).
  restarts: z.optional(intSchema(0, 1_000_000)),
  lastExit: z.optional(
    z.nullable(
      z.strictObject({
        code: z.nullable(intSchema(-1_000_000, 1_000_000)),
        signal: z.nullable(z.string().check(z.regex(/^[A-Z0-9]{1,16}$/))),
        // From v5: why it ended, when steward knows more than the code or signal (src/core/exit-reasons.ts).
        reason: z.optional(z.enum(EXIT_REASONS)),
      }),
    ),
  ),
  // From v6 (docs/design.md §18): the host's hold, when `held`: who put it, why, since and until
  // when (null: until release-hold). Text the helper wrote, checked again as any bytes from a node.
  hold: z.optional(
    z.nullable(
      z.strictObject({
        by: z.string().check(z.maxLength(256), z.regex(PLAIN_TEXT_RE, 'no control characters')),
        reason: z.string().check(z.maxLength(512), z.regex(PLAIN_TEXT_RE, 'no control characters')),
        at: epochMsSchema,
        until: z.nullable(epochMsSchema),
      }),
    ),
  ),
  // From v6: the update whose download failed and waits to be tried again (docs/design.md §18).
  fetchRetrying: z.optional(z.strictObject({ attemptId: attemptIdSchema })),
  // From v7: the app's signals (docs/design.md §19).
  signals: z.optional(signalsSchema),
});
export type HeartbeatApp = z.infer<typeof heartbeatAppSchema>;

// The heartbeat payload versions this steward sends and accepts (docs/design.md §16): v2 adds an app's
// `self`, v3 its `self.packageReverted`, v4 its `watch` and `lastExit` (§17), v5 `lastExit.reason` and `restarts`,
// v6 `hold` and `fetchRetrying` (§18), v7 `signals` (§19), v8 the payload's `trust` (§21). An agent sends the highest version that a control plane's
// answer listed (HEARTBEAT_VERSIONS_HEADER), and v1 before any such answer.
export const HEARTBEAT_VERSIONS = [1, 2, 3, 4, 5, 6, 7, 8] as const;
export type HeartbeatVersion = (typeof HEARTBEAT_VERSIONS)[number];

// What a host reports of its trust in releases (docs/design.md §21.2).
export const trustReportSchema = z.strictObject({
  scheme: z.enum(['keys', 'tuf']),
  rootVersion: z.optional(intSchema(1)),
  timestampVersion: z.optional(intSchema(1)),
  timestampAgeSeconds: z.optional(intSchema(0)),
});
export type TrustReport = z.infer<typeof trustReportSchema>;

// The payload of a `POST /v1/heartbeat` envelope (docs/design.md §6), signed by the node key.
// `receipts` are the helper's envelopes, relayed as they are; each is verified on its own.
export const heartbeatPayloadSchema = z
  .strictObject({
    v: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4), z.literal(5), z.literal(6), z.literal(7), z.literal(8)]),
    nodeId: z.string().check(z.minLength(1), z.maxLength(128)),
    seq: intSchema(1),
    sentAt: epochMsSchema,
    // No NUL: the control plane stores it as text (PostgreSQL's cannot hold one; src/core/nul.ts).
    bootId: z.string().check(z.minLength(1), z.maxLength(128), z.refine((s) => !hasNul(s), 'a boot id holds no NUL character')),
    agentVersion: versionSchema,
    apps: z.array(heartbeatAppSchema).check(z.maxLength(MAX_HEARTBEAT_APPS)),
    receipts: z.array(envelopeSchema).check(z.maxLength(MAX_HEARTBEAT_RECEIPTS)),
    // How the host trusts releases (docs/design.md §21.2): `keys` (per-app release keys, until its TUF
    // root is set) or `tuf`, with the versions it trusts and the age of its newest valid timestamp
    // (from the timestamp's signed `x-steward-signed-at`; absent when it has none).
    trust: z.optional(trustReportSchema),
  })
  .check(
    z.refine((p) => new Set(p.apps.map((a) => a.name)).size === p.apps.length, {
      message: 'each app is reported once',
      path: ['apps'],
    }),
    z.refine((p) => p.v >= 2 || p.apps.every((a) => a.self === undefined), {
      message: 'an app has `self` only in heartbeats v2',
      path: ['apps'],
    }),
    z.refine((p) => p.v >= 3 || p.apps.every((a) => a.self?.packageReverted === undefined), {
      message: 'an app has `self.packageReverted` only in heartbeats v3',
      path: ['apps'],
    }),
    z.refine((p) => p.v >= 4 || p.apps.every((a) => a.watch === undefined && a.lastExit === undefined), {
      message: 'an app has `watch` and `lastExit` only in heartbeats v4',
      path: ['apps'],
    }),
    z.refine((p) => p.v >= 5 || p.apps.every((a) => a.lastExit?.reason === undefined && a.restarts === undefined), {
      message: "an app has `restarts` and its `lastExit` has `reason` only in heartbeats v5",
      path: ['apps'],
    }),
    z.refine((p) => p.v >= 6 || p.apps.every((a) => a.hold === undefined), {
      message: 'an app has `hold` only in heartbeats v6',
      path: ['apps'],
    }),
    z.refine((p) => p.v >= 6 || p.apps.every((a) => a.fetchRetrying === undefined), {
      message: 'an app has `fetchRetrying` only in heartbeats v6',
      path: ['apps'],
    }),
    z.refine((p) => p.v >= 7 || p.apps.every((a) => a.signals === undefined), {
      message: 'an app has `signals` only in heartbeats v7',
      path: ['apps'],
    }),
    z.refine((p) => p.v >= 8 || p.trust === undefined, {
      message: 'a heartbeat has `trust` only in v8',
      path: ['trust'],
    }),
  );
export type HeartbeatPayload = z.infer<typeof heartbeatPayloadSchema>;
