import type { HostConfig } from '../core/config-schema.js';
import type { HostPaths } from '../core/paths.js';
import { logger } from '../platform/log.js';
import type { HelperCore } from './handlers.js';
import { cleanStaleStaging } from './start-cleanup.js';
import { cleanIdleAppFds } from './runners/clean-app-fds.js';
import { ensureRunning } from './update/first-pass.js';
import { recoverApp } from './update/recover.js';

const log = logger('helper:main');

// The helper's start for every app (docs/design.md §4), under helper.lock: validate and recover the
// journal, re-emit a missing receipt, run the first pass, clean staging. One app's trouble
// never stops the others.
export async function startApps(core: HelperCore, paths: HostPaths, config: HostConfig): Promise<void> {
  for (const app of Object.keys(config.apps).sort()) {
    try {
      // The app steward is this helper: its journal is the trial's, settled once every other
      // app is up (self/settle-trial.ts), and there is no process of it to start.
      if (config.apps[app]?.runner !== 'self') {
        const r = await recoverApp(core, app);
        if (r.action !== 'none') log('start app=%s %s', app, JSON.stringify(r));
        await ensureRunning(core, app);
      }
      await cleanStaleStaging(paths, app);
    } catch (err) {
      log('start of app=%s failed: %s', app, (err as Error).message);
    }
  }
  await cleanIdleAppFds(paths, config).catch((err) => log('cleaning /run/steward-fds: %s', (err as Error).message));
}
