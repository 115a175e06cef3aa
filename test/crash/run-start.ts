// Runs the helper's start on a root in this process: the same steps as steward-helper's main
// (run folder, helper.lock, layout, the real adapters, then recovery, first pass and staging
// cleanup for every app, then the lift of expired holds) without the sockets and the supervisor
// loop, so that the explorer can recover hundreds of crash states without paying a node start
// for each.
import { hostPaths, type HostPaths } from '../../src/core/paths.js';
import { buildCore } from '../../src/helper/build-core.js';
import { loadHostConfig } from '../../src/host/config.js';
import type { HelperCore } from '../../src/helper/handlers.js';
import { ensureLayout } from '../../src/helper/layout.js';
import { prepareRunDir } from '../../src/helper/server/bind-sockets.js';
import { startApps } from '../../src/helper/start-apps.js';
import { liftDueHolds } from '../../src/helper/holds/hold-expiry.js';
import { liftExpiredHold } from '../../src/helper/ops/hold.js';
import { readRunRecord } from '../../src/helper/runners/run-record.js';
import { acquireHelperLock } from '../../src/platform/lock.js';
import { systemAccounts } from '../../src/platform/users.js';

export interface StartedRoot {
  paths: HostPaths;
  core: HelperCore;
  // Stops every app the start left running and releases helper.lock.
  close(): Promise<void>;
}

// The helper's start (docs/design.md §4) on `root`, as steward-helper runs it.
export async function runHelperStart(root: string): Promise<StartedRoot> {
  const isRoot = process.getuid?.() === 0;
  const paths = hostPaths(root);
  const config = await loadHostConfig(paths.configFile, { isRoot, accounts: systemAccounts });
  await prepareRunDir(paths.runDir);
  const lock = await acquireHelperLock(paths.helperLock, {
    onCompromised: (err) => {
      throw err;
    },
  });
  try {
    await ensureLayout(paths);
    const core = await buildCore(paths, config, isRoot);
    await startApps(core, paths, config);
    // Holds that expired while no helper ran (docs/design.md §18), as main does.
    await liftDueHolds({ clock: core.clock, apps: () => Object.keys(config.apps), lift: (app, now) => liftExpiredHold(core, app, now) });
    return {
      paths,
      core,
      close: async () => {
        // SIGKILL, not stopApp: the state is thrown away, and stopApp's graceful stop and
        // record writes would cost more than the recovery itself.
        for (const app of Object.keys(config.apps)) {
          const pid = (await readRunRecord(paths, app).catch(() => null))?.process?.pid;
          if (pid) killGroup(pid);
        }
        // As the helper's own stop does: its runner keeps nothing (the process runner's spares).
        core.runner.release?.();
        await lock.release();
      },
    };
  } catch (err) {
    await lock.release().catch(() => {});
    throw err;
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    /* gone */
  }
}
