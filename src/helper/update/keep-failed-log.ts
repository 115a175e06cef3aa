import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { appLogFile, type HostPaths } from '../../core/paths.js';
import { writeFileAtomic } from '../../platform/fs-atomic.js';
import { tailLines } from '../runners/log-tail.js';

// Keeps the failed version's last 200 log lines at /var/log/steward/<app>-<attemptId>.log
// (DESIGN §4), so a failed upgrade can be debugged after the rollback. Returns the file,
// or undefined when there was nothing to keep or it could not be written.
export async function keepFailedLog(paths: HostPaths, app: string, attemptId: string, fromOffset: number): Promise<string | undefined> {
  try {
    const text = await tailLines(appLogFile(paths, app), fromOffset, 200);
    const file = path.join(paths.logDir, `${app}-${attemptId}.log`);
    await fsp.mkdir(paths.logDir, { recursive: true, mode: 0o750 });
    await writeFileAtomic(file, text, 0o640);
    return file;
  } catch {
    return undefined;
  }
}
