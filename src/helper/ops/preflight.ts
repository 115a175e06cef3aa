import { StewardError } from '../../core/errors.js';
import { requireApp } from '../../host/config.js';
import type { AppState } from '../../core/state-schemas.js';
import type { SocketKind } from '../../protocol/schemas.js';
import { holdViewOf, readHoldFile } from '../holds/hold-file.js';
import { readAppState } from '../state/app-state.js';
import type { UpdateContext } from '../update/context.js';

// The refusals every version- or run-state-changing request meets first (docs/design.md §4): BLOCKED,
// and HELD for helper.sock callers. (RECOVERING is the dispatcher's, before any handler runs.)
export async function preflight(
  ctx: UpdateContext,
  app: string,
  kind: SocketKind,
  opts: { allowBlocked?: boolean } = {},
): Promise<AppState> {
  requireApp(ctx.config, app);
  const state = await readAppState(ctx.paths, app);
  const blocked = ctx.blockedInMemory.get(app) ?? state.blocked;
  if (blocked && !opts.allowBlocked) {
    throw new StewardError('BLOCKED', `${app} is blocked (${blocked.reason}${blocked.message ? ': ' + blocked.message : ''}); \`agentctl recover ${app}\``);
  }
  if (state.hold && kind === 'helper') {
    const until = holdViewOf(state.hold, await readHoldFile(ctx.paths, app))?.until ?? null;
    throw new StewardError('HELD', `${app} is held by ${state.hold.by} since ${new Date(state.hold.at).toISOString()} (${state.hold.reason}), ${until === null ? 'until release-hold' : `until ${new Date(until).toISOString()}`}`);
  }
  return state;
}
