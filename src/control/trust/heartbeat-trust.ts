// What the heartbeat answer carries of the fleet's TUF repository (docs/design.md §21.2), to an agent
// that names it in steward-desired-fields: `trust: {rootVersion, timestampVersion}` (the newest
// published), and on each desired entry a `directive` signed with the director key for this node,
// app, version and attempt, issued now and holding until the entry's own notAfter or 24 h,
// whichever comes first. An older agent's answer stays strict: it gets neither.
import type http from 'node:http';
import type { KeyObject } from 'node:crypto';
import { DESIRED_FIELDS_HEADER, parseDesiredFields } from '../../core/control-api.js';
import { MAX_DIRECTIVE_LIFETIME_MS } from '../../core/trust/directive-schema.js';
import { parsePrivateKey } from '../../platform/keys.js';
import { signDirective } from '../../platform/trust/directive.js';
import type { Answer, TrustState } from '../server/answer.js';
import type { ControlStore, StoreReader } from '../store/store.js';

// The fleet's newest root and timestamp versions and the store's time, in one transaction.
export async function readTrustState(tx: StoreReader): Promise<TrustState> {
  return { rootVersion: (await tx.trust.latest('root'))?.version ?? null, timestampVersion: (await tx.trust.latest('timestamp'))?.version ?? null, now: await tx.now() };
}

// The director key, read once per store and root version: a new director key takes over only in
// the transaction that publishes a root (trust rotate --new-online), so a key read with root
// version N is the key while N is the newest. A heartbeat whose commit read a newer root than the
// one cached reads the key again; no instance goes on signing with the key a rotation replaced
// (its private key is deleted in that transaction).
const directors = new WeakMap<ControlStore, { rootVersion: number | null; key: KeyObject }>();

export async function withTrust(req: http.IncomingMessage, answer: Answer, store: ControlStore, nodeId: string | null): Promise<Answer> {
  if (answer.status !== 200 || nodeId === null) return answer;
  const fields = parseDesiredFields(req.headers[DESIRED_FIELDS_HEADER]);
  const wantTrust = fields.includes('trust');
  const wantDirective = fields.includes('directive');
  if (!wantTrust && !wantDirective) return answer;
  const body = answer.body as { desired?: Array<Record<string, unknown>> };
  // A fleet with no repository (its commit read no root) has no director key to read: without
  // this, every answer with desired entries to a new agent took one more transaction.
  const noRepository = answer.trust !== undefined && answer.trust.rootVersion === null;
  const cached = directors.get(store);
  const stale = !cached || answer.trust === undefined || answer.trust.rootVersion !== cached.rootVersion;
  const needKey = wantDirective && !noRepository && Array.isArray(body.desired) && body.desired.length > 0 && stale;
  // The heartbeat's commit read the versions and its time (group-commit.ts); a held answer made
  // again, or the director key not yet known here, reads them now.
  const read =
    answer.trust && !needKey
      ? { ...answer.trust, directorPem: null }
      : await store.read(async (tx) => ({
          ...(await readTrustState(tx)),
          directorPem: needKey ? ((await tx.trust.keys()).find((k) => k.role === 'director')?.privateKey ?? null) : null,
        }));
  const { rootVersion: root, timestampVersion: timestamp, now, directorPem } = read;
  // Cached with the root version read in the same transaction as the key.
  if (directorPem !== null) directors.set(store, { rootVersion: root, key: parsePrivateKey(directorPem) });
  else if (needKey) directors.delete(store);
  let out = body as Record<string, unknown>;
  // Only once the fleet has a repository: before it, a host has no root to check against.
  if (wantTrust && root !== null && timestamp !== null) out = { ...out, trust: { rootVersion: root, timestampVersion: timestamp } };
  const director = directors.get(store)?.key;
  if (wantDirective && director && Array.isArray(body.desired)) {
    out = {
      ...out,
      desired: body.desired.map((d) => {
        const notAfter = Math.min(typeof d.notAfter === 'number' ? d.notAfter : Infinity, now + MAX_DIRECTIVE_LIFETIME_MS);
        if (notAfter <= now) return d;
        const directive = signDirective({ nodeId, app: d.app as string, version: d.version as string, attemptId: d.attemptId as string, issuedAt: now, notAfter }, director);
        return { ...d, directive };
      }),
    };
  }
  return { ...answer, body: out };
}
