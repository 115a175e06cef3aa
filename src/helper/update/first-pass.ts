import { logger } from '../../platform/log.js';
import { readCurrent } from '../release-store.js';
import { readRunRecord } from '../runners/run-record.js';
import { readAppState } from '../state/app-state.js';
import { isAppAlive, startVersion, stopApp } from './app-process.js';
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
  }
  await startVersion(ctx, app, cur.version, 'first-pass');
  return 'started';
}
