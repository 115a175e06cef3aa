import { logger } from '../../platform/log.js';
import { readBootId } from '../../platform/proc-identity.js';
import { readCurrent } from '../release-store.js';
import { readRunRecord } from '../runners/run-record.js';
import { readAppState } from '../state/app-state.js';
import { appTarget, isAppAlive, startVersion, stopApp } from './app-process.js';
import type { UpdateContext } from './context.js';

const log = logger('helper:start');

// The start's first pass for one process app (docs/design.md §4, §5): a recorded process that is
// still the same live process of the current version is adopted; one that should run but
// does not is started (not a respawn: it spends no budget); of one whose record says stopped,
// whatever still runs is stopped. A blocked app is left as recovery left it; a record from
// another boot is never adopted or signalled. It holds the app's lock, as every start does: a
// supervisor pass that another app's exit brings meanwhile leaves this one alone, and never
// sees its record between the spawn and its write.
export async function ensureRunning(ctx: UpdateContext, app: string): Promise<'adopted' | 'started' | 'left'> {
  // A unit app's own unit and Restart= keep it running; the helper only starts it for updates.
  if (ctx.config.apps[app]?.runner !== 'process') return 'left';
  const held = await ctx.locks.acquire(app, { attemptId: 'first-pass', op: 'first-pass', phase: 'first-pass', startedAt: ctx.clock.now() });
  try {
    return await firstPass(ctx, app);
  } finally {
    held.release();
  }
}

async function firstPass(ctx: UpdateContext, app: string): Promise<'adopted' | 'started' | 'left'> {
  const state = await readAppState(ctx.paths, app).catch(() => null);
  if (!state || state.blocked || ctx.blockedInMemory.has(app)) return 'left';
  const cur = await readCurrent(ctx.paths, app);
  if (cur.state !== 'valid') return 'left';
  const rec = await readRunRecord(ctx.paths, app).catch(() => null);
  if (rec && rec.expected !== 'running') {
    // Nothing of an app that should not run may run: a crash between a start's spawn and its
    // record (agentctl start, restart) or between a stop's record and its signals leaves some.
    await stopUnrecorded(ctx, app, rec);
    return 'left';
  }
  if (rec?.process && (await isAppAlive(ctx, app, rec.process))) {
    if (rec.version === cur.version) {
      log('adopted app=%s pid=%d', app, rec.process.pid);
      return 'adopted';
    }
    await stopApp(ctx, app);
    await startVersion(ctx, app, cur.version, 'first-pass');
    return 'started';
  }
  // The recorded process is gone. A start (a respawn's included) spawns before it records the
  // new process, so a crash in between leaves that process running unrecorded: it is stopped
  // here, before anything starts another (one process per app, docs/design.md §5). The record's instance
  // token, durable before that spawn, is what proves it is the app's.
  await stopUnrecorded(ctx, app, rec);
  if (await isSupervisorsOwn(rec)) {
    log('left app=%s to the supervisor: %s since this boot', app, rec?.supervisor?.state);
    return 'left';
  }
  await startVersion(ctx, app, cur.version, 'first-pass');
  return 'started';
}

// The processes of the app that no record names as running: left by a crash between a spawn and
// its record, or by a main process that ended while no helper ran (what it started lives on).
async function stopUnrecorded(ctx: UpdateContext, app: string, rec: Awaited<ReturnType<typeof readRunRecord>>): Promise<void> {
  const cfg = ctx.config.apps[app];
  const timeoutMs = cfg?.runner === 'process' ? cfg.stopTimeoutMs : ctx.stopTimeoutMs;
  await ctx.runner.stop(await appTarget(ctx, app, rec), { timeoutMs });
}

// A respawn that waits for its time (`waiting`) or a budget that is spent (`error`), in this
// boot, is the supervisor's: a helper restart must neither bring the respawn forward nor revive
// an app given up on (only `agentctl restart` does). After a reboot the first pass starts it.
// A record without a process (its respawn failed to spawn) is taken to be of this boot.
async function isSupervisorsOwn(rec: Awaited<ReturnType<typeof readRunRecord>>): Promise<boolean> {
  const state = rec?.supervisor?.state;
  if (state !== 'waiting' && state !== 'error') return false;
  return !rec?.process || rec.process.bootId === (await readBootId());
}
