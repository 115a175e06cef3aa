import { requireApp } from '../config.js';
import type { AppLocks } from '../app-locks.js';
import { readAppState, writeAppState } from '../state/app-state.js';
import type { UpdateContext } from '../update/context.js';

// Puts a hold {by, at, reason} on the app (DESIGN §4): an operator acted over admin.sock,
// so helper.sock requests that would change the app are refused until release-hold.
export async function setHold(ctx: UpdateContext, app: string, hold: { by: string; reason: string }): Promise<void> {
  const state = await readAppState(ctx.paths, app);
  await writeAppState(ctx.paths, app, { ...state, hold: { by: hold.by.slice(0, 256), reason: hold.reason.slice(0, 512), at: ctx.clock.now() } });
}

// `release-hold`: clears the hold. Nothing to clear is success.
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
