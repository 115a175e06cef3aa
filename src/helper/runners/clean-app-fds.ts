import { promises as fsp } from 'node:fs';
import type { HostConfig } from '../../core/config-schema.js';
import type { HostPaths } from '../../core/paths.js';
import { isAppName } from '../../core/name-checks.js';
import { logger } from '../../platform/log.js';
import { removeAppFds } from './app-fds.js';
import { readRunRecord } from './run-record.js';

const log = logger('helper:start');

// At the helper's start, after the first pass: removes the FIFOs (app-fds.ts) of apps no longer
// configured as process apps, and of apps whose record does not say they run (a crash between a
// stop and its cleanup left them). A running app's are kept: its process holds them, and the
// watchdog reopens its FIFO.
export async function cleanIdleAppFds(paths: HostPaths, config: HostConfig): Promise<void> {
  const names = await fsp.readdir(paths.appFdsDir).catch(() => [] as string[]);
  for (const name of names) {
    if (!isAppName(name)) continue;
    if (config.apps[name]?.runner === 'process') {
      const rec = await readRunRecord(paths, name).catch(() => null);
      if (rec?.expected === 'running' && rec.process) continue;
    }
    log('removing the FIFOs of app=%s (not running)', name);
    removeAppFds(paths, name);
  }
}
