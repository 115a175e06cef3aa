// The agent user's half of enrollment (docs/design.md §6): runs as `steward` (as the current user under
// a root prefix), in its own folder. It makes the node key, signs the enroll payload with it,
// has root sign the same payload with the helper key (proveHelperKey), POSTs both, and writes
// node.key and enrollment.json; nobody else ever reads the node key.
import os from 'node:os';
import { promises as fsp } from 'node:fs';
import * as z from '../core/zod-mini.js';
import { controlPlaneUrlListSchema } from '../core/control-plane-urls.js';
import { claimedLabelsSchema, ENROLL_PATH, enrollAnswerSchema, errorAnswerSchema, type EnrollAnswer, type EnrollBody, type EnrollPayload } from '../core/control-api.js';
import { StewardError } from '../core/errors.js';
import { HOSTNAME_RE, HOSTNAME_RULE, isHostname } from '../core/name-checks.js';
import type { Clock } from '../platform/clock.js';
import { DOMAINS, generateKeyPair, keyIdOf, parsePrivateKey, parsePublicKey, signEnvelope } from '../platform/keys.js';
import { acquireHelperLock } from '../platform/lock.js';
import { agentFiles, ensureAgentDir, readEnrollment, writeControlPlaneFile, writeEnrollment, writeNodeKey } from './agent-files.js';
import type { ControlPlaneClient } from './control-plane-client.js';
import type { Logf } from './convergence.js';
import { Outbox } from './outbox.js';
import type { HostPaths } from '../core/paths.js';
import { relayMarkFile } from '../core/relay-mark.js';

// What the root side hands the agent user's process on stdin (the token never goes in argv).
export const enrollRequestSchema = z.strictObject({
  // Tried in order; the first that answers enrolls the node (docs/design.md §13).
  controlPlaneUrls: controlPlaneUrlListSchema,
  token: z.string().check(z.minLength(1), z.maxLength(256)),
  helperPublicKey: z.string().check(z.minLength(1), z.maxLength(4096)),
  caFile: z.optional(z.string().check(z.minLength(1))),
  insecure: z.optional(z.boolean()),
  force: z.optional(z.boolean()),
  // What the node proposes as its labels (`agentctl enroll --label`); the control plane keeps
  // them under claimed.<key>.
  labels: z.optional(claimedLabelsSchema),
  // The node's host name as root checked it (`agentctl enroll --hostname`, else the kernel's).
  hostname: z.optional(z.string().check(z.regex(HOSTNAME_RE, `hostname must be ${HOSTNAME_RULE}`))),
});
export type EnrollRequest = z.infer<typeof enrollRequestSchema>;

// What it may ask root for, once, on a line of its stdout before its result: the helper key's
// signature over the enroll payload bytes P (base64). Root answers on the child's stdin.
export const enrollProveRequestSchema = z.strictObject({ prove: z.string().check(z.minLength(1), z.maxLength(48 * 1024)) });
export const enrollProveAnswerSchema = z.union([
  z.strictObject({ helperSig: z.string().check(z.minLength(1), z.maxLength(256)) }),
  z.strictObject({ error: z.strictObject({ code: z.string().check(z.maxLength(64)), message: z.string().check(z.maxLength(4096)) }) }),
]);
export type EnrollProveAnswer = z.infer<typeof enrollProveAnswerSchema>;

// What it prints on stdout last: one JSON line.
export const enrollResultSchema = z.union([
  z.strictObject({ ok: z.literal(true), nodeId: z.string().check(z.minLength(1), z.maxLength(128)), heartbeatSeconds: z.number().check(z.int()), nodeKeyId: z.string(), controlPlaneUrl: z.string(), controlPlaneUrls: z.array(z.string()) }),
  z.strictObject({ ok: z.literal(false), error: z.strictObject({ code: z.string(), message: z.string() }) }),
]);
export type EnrollResult = z.infer<typeof enrollResultSchema>;

export interface EnrollDeps {
  paths: HostPaths;
  client: Pick<ControlPlaneClient, 'post' | 'url' | 'urls'>;
  clock: Pick<Clock, 'now'>;
  log: Logf;
  // Stops the process when the folder lock is taken over (docs/design.md §10).
  onCompromised: (err: Error) => void;
  // The helper key's signature (base64, domain steward-enroll-helper-v1) over the enroll
  // payload's bytes P, made by root, who alone reads the helper key (spawn-enroll-node.ts).
  proveHelperKey: (payload: Buffer) => Promise<string>;
}

// Enrolls this node: refuses ALREADY_ENROLLED unless `force`; writes nothing unless the control
// plane answers 200. Holds the agent folder's lock throughout, so no agent runs meanwhile.
export async function enrollNode(req: EnrollRequest, deps: EnrollDeps): Promise<Extract<EnrollResult, { ok: true }>> {
  const files = agentFiles(deps.paths);
  await ensureAgentDir(files);
  const lock = await acquireHelperLock(files.lock, { holder: 'steward-agent', lockedCode: 'AGENT_LOCKED', onCompromised: deps.onCompromised });
  try {
    const existing = await readEnrollment(files);
    const hasKey = await exists(files.nodeKey);
    if ((existing || hasKey) && !req.force) {
      const who = existing ? `as node ${existing.nodeId} with ${existing.controlPlaneUrl}` : `(${files.nodeKey} exists)`;
      throw new StewardError('ALREADY_ENROLLED', `this node is enrolled already ${who}; pass --force to enroll again with a new node key`);
    }
    const kp = generateKeyPair();
    const payload: EnrollPayload = {
      v: 1,
      token: req.token,
      nodePublicKey: kp.publicPem,
      helperPublicKey: req.helperPublicKey,
      hostname: enrollHostname(req.hostname),
      sentAt: deps.clock.now(),
      // Only when there are some: a control plane from before labels refuses the key.
      ...(req.labels && Object.keys(req.labels).length ? { labels: req.labels } : {}),
    };
    const envelope = signEnvelope(DOMAINS.enroll, payload, parsePrivateKey(kp.privatePem));
    const body: EnrollBody = { ...envelope, helperSig: await deps.proveHelperKey(Buffer.from(envelope.payload, 'base64')) };
    deps.log('enrolling urls=%s nodeKeyId=%s hostname=%s', deps.client.urls.map((u) => u.href).join(','), kp.keyId, payload.hostname);
    const answer = await askEnroll(deps.client, body);

    // The key goes to disk only now: a refused enrollment leaves nothing behind.
    await writeNodeKey(files, kp.privatePem);
    const outbox = await Outbox.open(files.outbox, { markFile: relayMarkFile(deps.paths) });
    if (existing || hasKey) await dropOldReceipts(outbox, deps.log);
    // From enrollment on, the helper keeps every receipt this agent has not relayed.
    await outbox.publishRelayMark(keyIdOf(parsePublicKey(req.helperPublicKey)));
    // Before enrollment.json, which is written last: an older agent reads only that one (with
    // the URL that answered), a newer one this list too.
    const urls = deps.client.urls.map((u) => u.href);
    await writeControlPlaneFile(files, { urls, answered: { url: deps.client.url.href, since: deps.clock.now() } });
    await writeEnrollment(files, {
      nodeId: answer.nodeId,
      controlPlaneUrl: deps.client.url.href,
      enrolledAt: deps.clock.now(),
      heartbeatSeconds: answer.heartbeatSeconds,
      nodeKeyId: kp.keyId,
    });
    deps.log('enrolled nodeId=%s nodeKeyId=%s heartbeatSeconds=%d', answer.nodeId, kp.keyId, answer.heartbeatSeconds);
    return { ok: true, nodeId: answer.nodeId, heartbeatSeconds: answer.heartbeatSeconds, nodeKeyId: kp.keyId, controlPlaneUrl: deps.client.url.href, controlPlaneUrls: urls };
  } finally {
    await lock.release().catch(() => {});
  }
}

async function askEnroll(client: Pick<ControlPlaneClient, 'post'>, envelope: unknown): Promise<EnrollAnswer> {
  const { status, json } = await client.post(ENROLL_PATH, envelope);
  if (status === 200) {
    const ok = enrollAnswerSchema.safeParse(json);
    if (ok.success) return ok.data;
    throw new StewardError('CONTROL_PLANE_UNREACHABLE', 'the control plane answered 200 with a body that is not an enroll answer {nodeId, heartbeatSeconds}');
  }
  const err = errorAnswerSchema.safeParse(json);
  const code = err.success ? err.data.error.code : 'UNKNOWN';
  const message = err.success ? err.data.error.message : `HTTP ${status}`;
  if (status === 401 && code === 'TOKEN_INVALID') throw new StewardError('TOKEN_INVALID', `the control plane refused the enrollment token: ${message}`);
  if (status >= 400 && status < 500) throw new StewardError('CONTROL_PLANE_REFUSED', `the control plane refused the enrollment (HTTP ${status} ${code}): ${message}`);
  throw new StewardError('CONTROL_PLANE_UNREACHABLE', `the control plane answered HTTP ${status} ${code}: ${message}`);
}

// Why: after a re-enrollment the control plane knows this node under a new nodeId, and refuses a
// whole heartbeat for one receipt naming the old one; those receipts can no longer be delivered.
// Acking them empties pending but keeps highestSeq, so they are not taken from the helper again.
async function dropOldReceipts(outbox: Outbox, log: Logf): Promise<void> {
  const seqs = [...outbox.pendingSeqs];
  if (seqs.length === 0) return;
  await outbox.ack(seqs);
  log('re-enrolled: dropped receipts pending for the old node identity seqs=%s', seqs.join(','));
}

async function exists(file: string): Promise<boolean> {
  try {
    await fsp.lstat(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

// The host name a node enrolls under: the one given, else the kernel's, which must be an RFC 1123
// host name (docs/design.md §12); the control plane refuses any other, so it is refused here first, by name.
export function enrollHostname(given?: string): string {
  const name = given ?? os.hostname();
  if (!isHostname(name)) {
    const what = given === undefined ? `this host's name ${JSON.stringify(name)}` : `--hostname ${JSON.stringify(name)}`;
    throw new StewardError('USAGE', `${what} is not ${HOSTNAME_RULE}${given === undefined ? ': pass --hostname NAME' : ''}`);
  }
  return name;
}
