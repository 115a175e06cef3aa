import type { Readable } from 'node:stream';
import { StewardError } from '../../core/errors.js';
import { trustBundleSchema } from '../../core/control-api.js';
import { mustParse } from '../../core/must-parse.js';
import type { TrustAnswer } from '../../protocol/answers.js';
import type { TrustRefreshRequest, TrustSetRootRequest } from '../../protocol/schemas.js';
import type { OpContext } from '../server/api-server.js';
import type { TransactionCore } from './run-transaction.js';
import { refreshTrust, setTrustedRoot, type TrustState } from '../trust/tuf-client.js';
import type { TrustRefreshGate } from '../trust/refresh-gate.js';
import { readTrustState, withTrustLock } from '../trust/trust-store.js';

// The upload that followed a request line, whole (its size was announced and capped by the schema).
async function readUpload(upload: Readable | null, size: number): Promise<Buffer> {
  if (!upload) throw new StewardError('BAD_REQUEST', 'the request announced upload bytes that did not come');
  const chunks: Buffer[] = [];
  let got = 0;
  for await (const c of upload) {
    got += (c as Buffer).length;
    if (got > size) throw new StewardError('BAD_REQUEST', `more than the ${size} upload bytes announced`);
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

function answerOf(s: TrustState): TrustAnswer {
  return {
    scheme: s.scheme,
    ...(s.rootVersion !== undefined ? { rootVersion: s.rootVersion } : {}),
    ...(s.timestampVersion !== undefined ? { timestampVersion: s.timestampVersion } : {}),
    ...(s.timestampSignedAt !== undefined ? { timestampSignedAt: s.timestampSignedAt } : {}),
  };
}

// The bundle of a trust-refresh as bytes: the upload, or the inline bundle's JSON.
async function bundleBytes(req: TrustRefreshRequest, ctx: OpContext): Promise<Buffer> {
  return req.bundle === undefined ? readUpload(ctx.upload, ctx.uploadSize) : Buffer.from(JSON.stringify(req.bundle), 'utf8');
}

// `trust-refresh` (docs/design.md §21): the bundle verified from the trusted root by tuf-js; what
// verifies is trusted, all at once, or nothing is. Over helper.sock under `gate` (refresh-gate.ts:
// one at a time, an identical bundle not verified twice, a token bucket); root's admin.sock is not bound.
export async function handleTrustRefresh(core: Pick<TransactionCore, 'paths' | 'clock'>, req: TrustRefreshRequest, ctx: OpContext, gate?: TrustRefreshGate): Promise<TrustAnswer> {
  const verify = async (bytes: Buffer): Promise<TrustAnswer> => {
    let bundle = req.bundle;
    if (bundle === undefined) {
      let json: unknown;
      try {
        json = JSON.parse(bytes.toString('utf8'));
      } catch {
        throw new StewardError('TRUST_INVALID', 'the trust bundle is not JSON');
      }
      bundle = mustParse(trustBundleSchema, json, 'TRUST_INVALID', 'the trust bundle');
    }
    return answerOf(await refreshTrust(core.paths, bundle, core.clock.now()));
  };
  if (!gate || ctx.kind !== 'helper') return verify(await bundleBytes(req, ctx));
  return gate.run(() => bundleBytes(req, ctx), verify, async () => answerOf(await withTrustLock(core.paths, () => readTrustState(core.paths, core.clock.now()))));
}

// `trust-set-root` (admin.sock): the uploaded bytes become the trusted TUF root (setTrustedRoot's rules).
export async function handleTrustSetRoot(core: Pick<TransactionCore, 'paths' | 'clock'>, _req: TrustSetRootRequest, ctx: OpContext, gate?: TrustRefreshGate): Promise<TrustAnswer> {
  try {
    return answerOf(await setTrustedRoot(core.paths, await readUpload(ctx.upload, ctx.uploadSize), core.clock.now()));
  } finally {
    gate?.storeChanged();
  }
}
