import { StewardError } from '../../core/errors.js';
import { describeFailures, quarantineInForce } from '../../core/quarantine.js';
import type { AppState } from '../../core/state-schemas.js';
import { allowDowngradeCommand } from '../../core/downgrade-schema.js';
import { SELF_APP } from '../../core/self-schemas.js';
import { compareVersions } from '../../core/version.js';
import type { SocketKind } from '../../protocol/schemas.js';

// A version an app's update may not go below besides its highest active one (the app steward's,
// docs/self-update.md). `insist`: an admin's --allow-downgrade may go below it.
export interface VersionFloor {
  version: string;
  what: string;
  insist: boolean;
}

// The refusals of docs/design.md §3.3 that depend on the app's state: a version below the highest
// that ever reached `active` (unless an admin allows the downgrade, or a signed downgrade
// authorization the caller checked does, docs/design.md §18), and a quarantined
// version before its retryAfter (unless forced). Nothing changes when one applies.
// A retryAfter more than `quarantineCapMs` away cannot come from a steady clock: it was stamped
// before the clock went back, and is not trusted (as a persisted time in the future counts as
// now, docs/design.md §5): the version may be tried, and a new failure quarantines it by today's clock.
// Otherwise a clock set back a year would quarantine a version for a year.
export function checkRefusals(input: {
  app: string;
  version: string;
  state: AppState;
  now: number;
  kind: SocketKind;
  allowDowngrade?: boolean | undefined;
  // A signed downgrade authorization for exactly this app and version held (verify-downgrade.ts).
  downgradeAuthorized?: boolean | undefined;
  force?: boolean | undefined;
  quarantineCapMs?: number;
  floors?: readonly VersionFloor[] | undefined;
}): void {
  const { app, version, state, now } = input;
  const floors: VersionFloor[] = [
    ...(state.highestActive ? [{ version: state.highestActive, what: 'the highest version that was active here', insist: true }] : []),
    ...(input.floors ?? []),
  ];
  for (const floor of floors) {
    if (compareVersions(version, floor.version) >= 0) continue;
    if (floor.insist && input.allowDowngrade && input.kind === 'admin') continue;
    if (floor.insist && input.downgradeAuthorized) continue;
    throw new StewardError('DOWNGRADE_REFUSED', `${app} ${version} is below ${floor.version}, ${floor.what}` + (floor.insist ? remedyOf(app, version, input.kind) : ''));
  }
  const q = state.quarantine[version];
  if (q && quarantineInForce(q, now, input.quarantineCapMs ?? Infinity) && !input.force) {
    throw new StewardError(
      'QUARANTINED',
      `${app} ${version} ${describeFailures(q.failures)} and is quarantined until ${new Date(q.retryAfter).toISOString()} (--force to try now)`,
      { details: { retryAfter: q.retryAfter } },
    );
  }
}

// What lets an update below an insisting floor through: over admin.sock the flag; from the fleet
// (helper.sock) only a signed downgrade authorization, which the control plane sends once an
// operator made one. steward itself goes back through its package (docs/self-update.md).
function remedyOf(app: string, version: string, kind: SocketKind): string {
  if (kind === 'admin') return ' (--allow-downgrade to insist)';
  if (app === SELF_APP) return '';
  return `, and no downgrade authorization came with the request: \`${allowDowngradeCommand(app, version)}\` signs one, and the control plane sends it with the update`;
}
