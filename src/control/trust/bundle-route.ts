// `GET /v1/trust/bundle?root=N` (docs/design.md §21.2): the fleet's TUF metadata a host trusting root
// N needs, for its helper to verify with tuf-js's Updater: every root after N, the newest
// timestamp, the snapshot it names, and the targets and app roles that snapshot names, each as the
// exact bytes stored. Only an enrolled node asks, with its Steward-Node credential as for /v1/wait.
import type http from 'node:http';
import { MetadataKind } from '@tufjs/models';
import { MAX_TRUST_BUNDLE_BYTES, type TrustBundle } from '../../core/control-api.js';
import { errorAnswer } from '../server/answer.js';
import { sendJson } from '../server/send.js';
import type { ControlStore, StoreReader } from '../store/store.js';
import { waitingNode } from '../wakeups/wait-route.js';
import { parseMetadata } from './repository.js';

export const TRUST_BUNDLE_PATH = '/v1/trust/bundle';

// The root version the query names, or why it is refused.
export function parseBundleQuery(rawUrl: string): { ok: true; root: number } | { ok: false; message: string } {
  const q = rawUrl.indexOf('?');
  const given = new URLSearchParams(q < 0 ? '' : rawUrl.slice(q + 1)).getAll('root');
  const text = given[0] ?? '';
  if (given.length !== 1 || !/^[1-9][0-9]{0,15}$/.test(text) || !Number.isSafeInteger(Number(text))) {
    return { ok: false, message: `root must be given once, as the version of the root the host trusts (a whole number from 1); got ${JSON.stringify(given.join(',').slice(0, 40))}` };
  }
  return { ok: true, root: Number(text) };
}

// The bundle, or null when the fleet has no repository (no timestamp) yet.
export async function trustBundle(tx: StoreReader, trustedRoot: number): Promise<TrustBundle | null> {
  const ts = await tx.trust.latest('timestamp');
  if (!ts) return null;
  const files: Record<string, string> = {};
  const put = (name: string, bytes: string) => void (files[name] = Buffer.from(bytes, 'utf8').toString('base64'));
  for (const r of await tx.trust.after('root', trustedRoot)) put(`${r.version}.root.json`, r.bytes);
  put('timestamp.json', ts.bytes);
  const timestamp = parseMetadata(MetadataKind.Timestamp, ts.bytes);
  const snapshotVersion = timestamp.signed.snapshotMeta.version;
  const snap = await tx.trust.get('snapshot', snapshotVersion);
  if (snap) {
    put(`${snap.version}.snapshot.json`, snap.bytes);
    const snapshot = parseMetadata(MetadataKind.Snapshot, snap.bytes);
    for (const [file, meta] of Object.entries(snapshot.signed.meta)) {
      const role = file.replace(/\.json$/, '');
      const row = await tx.trust.get(role, meta.version);
      if (row) put(`${row.version}.${role}.json`, row.bytes);
    }
  }
  return { v: 1, files };
}

export async function answerTrustBundle(req: http.IncomingMessage, res: http.ServerResponse, store: ControlStore): Promise<void> {
  if (req.method !== 'GET') {
    res.setHeader('allow', 'GET');
    return sendJson(res, errorAnswer(405, 'NOT_FOUND', `${TRUST_BUNDLE_PATH} takes GET`));
  }
  const query = parseBundleQuery(req.url ?? '');
  if (!query.ok) return sendJson(res, errorAnswer(400, 'BAD_QUERY', query.message));
  const who = await waitingNode(req.headers.authorization, store);
  if (!who.ok) return sendJson(res, who.answer);
  const bundle = await store.read((tx) => trustBundle(tx, query.root));
  if (!bundle) return sendJson(res, errorAnswer(404, 'NOT_FOUND', 'this fleet has no TUF repository yet: an operator publishes its root and targets first'));
  const size = Object.values(bundle.files).reduce((n, b) => n + b.length, 0);
  if (size > MAX_TRUST_BUNDLE_BYTES) {
    // Why not part of it: a bundle cut short cannot verify; the operator must see this.
    return sendJson(res, errorAnswer(500, 'INTERNAL', `the trust bundle is ${size} bytes, over the ${MAX_TRUST_BUNDLE_BYTES} a host reads: too many roots after ${query.root}`));
  }
  return sendJson(res, { status: 200, body: bundle });
}
