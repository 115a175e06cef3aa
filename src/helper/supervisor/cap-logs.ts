import { lstatSync } from 'node:fs';
import { appLogFile } from '../../core/paths.js';
import { logger } from '../../platform/log.js';
import { capLogFile } from '../runners/log-cap.js';
import { readRunRecord, writeRunRecord } from '../runners/run-record.js';
import type { UpdateContext } from '../update/context.js';

const log = logger('helper:supervisor');

// Caps the log file of every process app at its logMaxBytes (docs/design.md §2: /var/log/steward/<app>.log,
// written by the app itself), so that an app cannot fill the disk with its output. A runner
// with a log of its own (systemd's journal, which has its own limits) has no such file. Each file
// is looked at with one lstat; one over its cap is cut under the app's lock, and the record's
// logOffset (where the current process's output starts) moves with the cut. An app whose lock is
// held (an update, start or stop: its record's logOffset may be about to be used) is cut at a
// later look.
export async function capAppLogs(ctx: UpdateContext): Promise<void> {
  if (ctx.runner.tailLog) return;
  for (const [app, cfg] of Object.entries(ctx.config.apps)) {
    if (cfg.runner !== 'process') continue;
    const file = appLogFile(ctx.paths, app);
    let size: number;
    try {
      size = lstatSync(file).size;
    } catch {
      continue;
    }
    if (size <= cfg.logMaxBytes || ctx.locks.get(app)) continue;
    const held = ctx.locks.tryAcquire(app, { attemptId: 'log-cap', op: 'supervise', phase: 'log-cap', startedAt: ctx.clock.now() });
    try {
      const cut = await capLogFile(file, cfg.logMaxBytes);
      if (cut === 0) continue;
      log('log of app=%s over logMaxBytes=%d (%d bytes): cut its first %d bytes', app, cfg.logMaxBytes, size, cut);
      const rec = await readRunRecord(ctx.paths, app);
      if (rec?.logOffset !== undefined) await writeRunRecord(ctx.paths, { ...rec, logOffset: Math.max(0, rec.logOffset - cut) });
    } catch (err) {
      log('cannot cap the log of app=%s (%s): %s', app, file, (err as Error).message);
    } finally {
      held.release();
    }
  }
}
