import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { appLogFile, type HostPaths } from '../../core/paths.js';
import { writeFileAtomic } from '../../platform/fs-atomic.js';
import { tailLines } from '../../platform/log-tail.js';
import type { AppRunner } from '../runners/runner.js';

// Where the failed version's output is: a runner with its own log (the systemd runner's
// journald) and when that version started; without one, the app's log file from the offset.
export interface FailedLogSource {
  runner?: Pick<AppRunner, 'tailLog'> | undefined;
  sinceMs?: number | null;
}

// Keeps the failed version's last 200 log lines at /var/log/steward/<app>-<attemptId>.log
// (docs/design.md §4), so a failed upgrade can be debugged after the rollback. Returns the file,
// or undefined when there was nothing to keep or it could not be written.
export async function keepFailedLog(
  paths: HostPaths,
  app: string,
  attemptId: string,
  fromOffset: number,
  source: FailedLogSource = {},
): Promise<string | undefined> {
  try {
    const { runner, sinceMs } = source;
    const text =
      runner?.tailLog && typeof sinceMs === 'number'
        ? await runner.tailLog(app, sinceMs, 200)
        : await tailLines(appLogFile(paths, app), fromOffset, 200);
    const file = path.join(paths.logDir, `${app}-${attemptId}.log`);
    await fsp.mkdir(paths.logDir, { recursive: true, mode: 0o750 });
    await writeFileAtomic(file, text, 0o640);
    return file;
  } catch {
    return undefined;
  }
}
