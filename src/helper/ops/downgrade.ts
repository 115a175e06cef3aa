import type { AppState } from '../../core/state-schemas.js';
import { SELF_APP } from '../../core/self-schemas.js';
import { compareVersions } from '../../core/version.js';
import type { UpdateRequest } from '../../protocol/schemas.js';
import { verifyDowngrade, type AuthorizedDowngrade } from '../stage/verify-downgrade.js';
import type { TransactionCore } from './run-transaction.js';

// The signed downgrade authorization an update carries, checked (docs/design.md §18), when the
// update goes below the app's highest active version; null when it does not (an authorization
// then changes nothing), when none came (the refusal of stage/refusals.ts names the command that
// makes one), and for the app steward, which goes back through its package (docs/self-update.md).
// One that came and does not hold is refused DOWNGRADE_REFUSED, saying which check failed.
export async function authorizedDowngradeOf(core: Pick<TransactionCore, 'paths' | 'clock'>, req: UpdateRequest, state: AppState): Promise<AuthorizedDowngrade | null> {
  const below = state.highestActive;
  // An admin's --allow-downgrade (admin.sock only, server/socket-policy.ts) goes below as it always did.
  if (req.downgrade === undefined || req.allowDowngrade === true || req.app === SELF_APP || below === null || compareVersions(req.version, below) >= 0) return null;
  return verifyDowngrade(core.paths, req.downgrade, { app: req.app, version: req.version, below, now: core.clock.now() });
}
