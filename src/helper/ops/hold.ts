import { escapeControlChars } from '../../core/control-chars.js';
import type { AppState } from '../../core/state-schemas.js';
import { lookupUserById } from '../../platform/users.js';
import { requireApp } from '../../host/config.js';
import type { AppLocks } from '../app-locks.js';
import type { OpContext } from '../server/api-server.js';
import { readAppState, writeAppState } from '../state/app-state.js';
import type { UpdateContext } from '../update/context.js';

// Who a hold names (docs/design.md §4): the peer's credentials as the kernel recorded them at connect
// (SO_PEERCRED), never what the request says, e.g. "alice (uid 1001) over helper.sock". Without
// them (no perl, the client already gone), the socket says as much as is known: who may open it.
export async function holderOf(op: Pick<OpContext, 'kind' | 'peer'>): Promise<string> {
  const sock = `${op.kind}.sock`;
  const got = await op.peer();
  if (!got.ok) {
    const who = op.kind === 'helper' ? 'a member of group steward' : process.getuid?.() === 0 ? 'root' : `uid ${process.getuid?.()}`;
    return `${who} over ${sock} (peer unknown: ${got.why})`;
  }
  const { uid } = got.peer;
  const name = (await lookupUserById(uid).catch(() => null))?.name;
  return `${name ? `${name} (uid ${uid})` : `uid ${uid}`} over ${sock}`;
}

// Puts a hold {by, at, reason} on the app (docs/design.md §4): an operator acted, so helper.sock
// requests that would change the app are refused until release-hold (admin.sock). `by` is
// the peer of `op`'s connection. `state` is the app's state as the caller read it under the
// app's lock (read here when not given); the state written is returned.
export async function setHold(ctx: UpdateContext, app: string, op: Pick<OpContext, 'kind' | 'peer'>, reason: string, state?: AppState): Promise<AppState> {
  const by = await holderOf(op);
  const held = { ...(state ?? (await readAppState(ctx.paths, app))), hold: { by: escapeControlChars(by).slice(0, 256), reason: escapeControlChars(reason).slice(0, 512), at: ctx.clock.now() } };
  await writeAppState(ctx.paths, app, held);
  return held;
}

// `release-hold` (admin.sock only): clears the hold. Nothing to clear is success.
export async function releaseHold(ctx: UpdateContext & { locks: AppLocks }, app: string): Promise<{ app: string; released: boolean }> {
  requireApp(ctx.config, app);
  const held = await ctx.locks.acquire(app, { attemptId: 'release-hold', op: 'release-hold', phase: 'write', startedAt: ctx.clock.now() });
  try {
    const state = await readAppState(ctx.paths, app);
    if (!state.hold) return { app, released: false };
    await writeAppState(ctx.paths, app, { ...state, hold: null });
    return { app, released: true };
  } finally {
    held.release();
  }
}
