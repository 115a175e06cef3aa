import type { Progress } from '../../protocol/progress.js';
import type { StageRequest, UpdateRequest } from '../../protocol/schemas.js';
import type { OpContext } from '../server/api-server.js';
import type { StageInput } from '../stage/stage-release.js';

// What a stage or update request asks staging for: its fields and the upload that followed it.
export function stageInputOf(
  req: StageRequest | UpdateRequest,
  ctx: OpContext,
  attemptId: string,
  progress: (p: Progress) => void,
): StageInput {
  return {
    kind: ctx.kind,
    app: req.app,
    version: req.version,
    attemptId,
    manifest: req.manifest,
    ...(req.indexedManifest ? { indexedManifest: req.indexedManifest } : {}),
    integrity: req.integrity,
    path: req.path,
    upload: ctx.upload ? { stream: ctx.upload, size: ctx.uploadSize } : null,
    allowUnsigned: req.allowUnsigned,
    allowDowngrade: req.allowDowngrade,
    force: req.force,
    progress,
    ...('fetchAuth' in req && req.fetchAuth ? { fetchAuth: req.fetchAuth } : {}),
    ...('mirrors' in req && req.mirrors ? { mirrors: req.mirrors } : {}),
    ...('fetchUntil' in req && req.fetchUntil !== undefined ? { fetchUntil: req.fetchUntil } : {}),
    ...(req.notAfter !== undefined ? { notAfter: req.notAfter } : {}),
  };
}
