import { StewardError } from '../../core/errors.js';
import type { AppState } from '../../core/state-schemas.js';
import { compareVersions } from '../../core/version.js';
import type { SocketKind } from '../../protocol/schemas.js';

// The refusals of DESIGN §3.3 that depend on the app's state: a version below the highest
// that ever reached `active` (unless an admin allows the downgrade), and a quarantined
// version before its retryAfter (unless forced). Nothing changes when one applies.
export function checkRefusals(input: {
  app: string;
  version: string;
  state: AppState;
  now: number;
  kind: SocketKind;
  allowDowngrade?: boolean | undefined;
  force?: boolean | undefined;
}): void {
  const { app, version, state, now } = input;
  if (state.highestActive && compareVersions(version, state.highestActive) < 0) {
    if (!(input.allowDowngrade && input.kind === 'admin')) {
      throw new StewardError(
        'DOWNGRADE_REFUSED',
        `${app} ${version} is below ${state.highestActive}, the highest version that was active here` +
          (input.kind === 'admin' ? ' (--allow-downgrade to insist)' : ''),
      );
    }
  }
  const q = state.quarantine[version];
  if (q && q.retryAfter > now && !input.force) {
    throw new StewardError(
      'QUARANTINED',
      `${app} ${version} failed ${q.failures} time(s) and is quarantined until ${new Date(q.retryAfter).toISOString()} (--force to try now)`,
      { details: { retryAfter: q.retryAfter } },
    );
  }
}
