import { existsSync } from 'node:fs';
import path from 'node:path';
import { removeTree } from '../platform/fs-atomic.js';
import { AGENT_UNIT, HELPER_UNIT, LIB_DIR, PURGED_DIRS, SYSUSERS_FILE, TMPFILES_FILE, UNIT_DIR, type Step } from './install-layout.js';
import { removeLauncher } from './agentctl-launcher.js';
import { cgroupDir, stopCgroupLeftovers } from './cgroup-leftovers.js';
import { removeIfPresent } from './root-files.js';
import { requireRoot, requireSystemd, type SystemTools } from './system-tools.js';

export interface UninstallOptions {
  purge: boolean;
  tools: SystemTools;
  onStep?: (s: Step) => void;
}

// `agentctl uninstall [--purge]`: stops and disables the units and removes what install dropped.
// Without --purge every byte of state stays (release trees, journals, keys, config, the node
// identity), so installing again resumes where the host was. Idempotent.
export async function uninstallSteward(opts: UninstallOptions): Promise<Step[]> {
  requireRoot(opts.purge ? 'uninstall --purge' : 'uninstall');
  requireSystemd('uninstall');
  const steps: Step[] = [];
  const did = (step: string, action: Step['action'], detail: string) => {
    const s = { step, action, detail };
    steps.push(s);
    opts.onStep?.(s);
  };

  // 1. Stop and disable: agent first, then the helper. Apps keep running (KillMode=process).
  for (const unit of [AGENT_UNIT, HELPER_UNIT]) {
    const file = path.join(UNIT_DIR, unit);
    if (!existsSync(file)) {
      did(`stop ${unit}`, 'absent', `${file} is not there`);
      continue;
    }
    await opts.tools.run('systemctl', ['disable', '--now', unit]);
    did(`stop ${unit}`, 'ran', `systemctl disable --now ${unit}`);
  }
  if (opts.purge) {
    // Why: the apps' release trees are about to be removed; apps would run on deleted files.
    await opts.tools.run('systemctl', ['stop', 'steward-app-*.service'], { allowFail: true });
    did('stop apps', 'ran', 'systemctl stop steward-app-*.service (apps run by the systemd runner)');
    // Apps of the detached runner outlive the helper in its cgroup (KillMode=process).
    const cgroup = (await opts.tools.run('systemctl', ['show', '-p', 'ControlGroup', '--value', HELPER_UNIT], { allowFail: true })).stdout.trim();
    const dir = await cgroupDir(cgroup || `/system.slice/${HELPER_UNIT}`);
    const pids = dir ? await stopCgroupLeftovers(dir) : [];
    did('stop detached apps', pids.length ? 'ran' : 'skipped', pids.length ? `stopped pids ${pids.join(', ')} left in ${dir}` : `none left in the ${HELPER_UNIT} cgroup`);
  }

  // 2. What install dropped.
  let unitsRemoved = false;
  for (const unit of [HELPER_UNIT, AGENT_UNIT]) {
    const a = await removeIfPresent(path.join(UNIT_DIR, unit));
    if (a === 'removed') unitsRemoved = true;
    did(`unit ${unit}`, a, path.join(UNIT_DIR, unit));
  }
  if (unitsRemoved) {
    await opts.tools.run('systemctl', ['daemon-reload']);
    did('daemon-reload', 'ran', 'systemctl daemon-reload');
  }
  did('sysusers.d', await removeIfPresent(SYSUSERS_FILE), `${SYSUSERS_FILE} (the user and group steward stay: a uid is never reused for someone else's files)`);
  did('tmpfiles.d', await removeIfPresent(TMPFILES_FILE), TMPFILES_FILE);
  const launcher = await removeLauncher();
  did('agentctl', launcher.action, launcher.detail);
  const hadCode = existsSync(LIB_DIR);
  await removeTree(LIB_DIR);
  did('code', hadCode ? 'removed' : 'absent', LIB_DIR);

  // 3. --purge: all of steward's state.
  if (opts.purge) {
    for (const dir of PURGED_DIRS) {
      const had = existsSync(dir);
      await removeTree(dir);
      did('PURGE', had ? 'removed' : 'absent', dir);
    }
  } else {
    did('state', 'skipped', `kept: ${PURGED_DIRS.filter((d) => d !== '/run/steward').join(', ')} (--purge removes them)`);
  }
  return steps;
}
