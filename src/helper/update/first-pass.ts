import { logger } from '../../platform/log.js';
import { readBootId } from '../../platform/proc-identity.js';
import { readCurrent } from '../release-store.js';
import { readRunRecord } from '../runners/run-record.js';
import { readAppState } from '../state/app-state.js';
import { isAppAlive, startVersion, stopApp } from './app-process.js';
import { findAppProcesses } from './find-app-processes.js';
import type { UpdateContext } from './context.js';

const log = logger('helper:start');

// The start's first pass for one process app (DESIGN §4, §5): a recorded process that is
// still the same live process of the current version is adopted; one that should run but
// does not is started (not a respawn: it spends no budget). A blocked app is left as
// recovery left it; a record from another boot is never adopted or signalled.
export async function ensureRunning(ctx: UpdateContext, app: string): Promise<'adopted' | 'started' | 'left'> {
  // A unit app's own unit and Restart= keep it running; the helper only starts it for updates.
  if (ctx.config.apps[app]?.runner !== 'process') return 'left';
  const state = await readAppState(ctx.paths, app).catch(() => null);
  if (!state || state.blocked || ctx.blockedInMemory.has(app)) return 'left';
  const cur = await readCurrent(ctx.paths, app);
  if (cur.state !== 'valid') return 'left';
  const rec = await readRunRecord(ctx.paths, app).catch(() => null);
  if (rec && rec.expected !== 'running') return 'left';
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
  // here, before anything starts another (one process per app, DESIGN §5).
  await stopUnrecorded(ctx, app);
  if (await isSupervisorsOwn(rec)) {
    log('left app=%s to the supervisor: %s since this boot', app, rec?.supervisor?.state);
    return 'left';
  }
  await startVersion(ctx, app, cur.version, 'first-pass');
  return 'started';
}

// Session leaders running from the app's release trees that no record names: left by a crash
// between a spawn and its record.
async function stopUnrecorded(ctx: UpdateContext, app: string): Promise<void> {
  const cfg = ctx.config.apps[app];
  const timeoutMs = cfg?.runner === 'process' ? cfg.stopTimeoutMs : ctx.stopTimeoutMs;
  for (const orphan of await findAppProcesses(ctx.paths, app)) {
    log('stopping unrecorded process app=%s pid=%d', app, orphan.pid);
    await ctx.runner.stop(orphan, { timeoutMs });
  }
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
