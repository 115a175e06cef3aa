import type { Readable } from 'node:stream';
import { StewardError } from '../../core/errors.js';
import { trustBundleSchema } from '../../core/control-api.js';
import { mustParse } from '../../core/must-parse.js';
import type { TrustAnswer } from '../../protocol/answers.js';
import type { TrustRefreshRequest, TrustSetRootRequest } from '../../protocol/schemas.js';
import type { OpContext } from '../server/api-server.js';
import type { TransactionCore } from './run-transaction.js';
import { refreshTrust, setTrustedRoot, type TrustState } from '../trust/tuf-client.js';

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

// `trust-refresh` (docs/design.md §21): the bundle verified from the trusted root by tuf-js; what
// verifies is trusted, all at once, or nothing is.
export async function handleTrustRefresh(core: Pick<TransactionCore, 'paths' | 'clock'>, req: TrustRefreshRequest, ctx: OpContext): Promise<TrustAnswer> {
  let bundle = req.bundle;
  if (bundle === undefined) {
    const bytes = await readUpload(ctx.upload, ctx.uploadSize);
    let json: unknown;
    try {
      json = JSON.parse(bytes.toString('utf8'));
    } catch {
      throw new StewardError('TRUST_INVALID', 'the trust bundle is not JSON');
    }
    bundle = mustParse(trustBundleSchema, json, 'TRUST_INVALID', 'the trust bundle');
  }
  return answerOf(await refreshTrust(core.paths, bundle, core.clock.now()));
}

// `trust-set-root` (admin.sock): the uploaded bytes become the trusted TUF root (setTrustedRoot's rules).
export async function handleTrustSetRoot(core: Pick<TransactionCore, 'paths' | 'clock'>, _req: TrustSetRootRequest, ctx: OpContext): Promise<TrustAnswer> {
  return answerOf(await setTrustedRoot(core.paths, await readUpload(ctx.upload, ctx.uploadSize), core.clock.now()));
}
