// The Debian package's configure step (docs/design.md §14, docs/package.md): what its postinst runs as
// `agentctl install --packaged`, from the package's own code in /usr/lib/steward/<version>/.
// dpkg has already put the code, /usr/bin/agentctl, the units and the sysusers.d and tmpfiles.d
// files in place; this does the rest of what `agentctl install` does, and the postinst then
// enables and starts (or restarts) the helper itself.
import { existsSync, promises as fsp } from 'node:fs';
import path from 'node:path';
import { hostPaths } from '../core/paths.js';
import { packageRoot } from '../platform/own-version.js';
import { readRegularFile, removeTree } from '../platform/fs-atomic.js';
import { StewardError } from '../core/errors.js';
import { installAgentRelease } from './agent-release.js';
import { removeLauncher } from './agentctl-launcher.js';
import { checkInstallInputs } from './install-inputs.js';
import { forgetPackageTrial } from './package-check.js';
import { makeKeyAndConfig } from './install.js';
import { DROPPED_FILES, LIB_DIR, PACKAGE_DEFAULT_CONFIG, type Step } from './install-layout.js';
import { removeIfPresent } from './root-files.js';
import { requireRoot, type SystemTools } from './system-tools.js';

// Where the package puts the sysusers.d and tmpfiles.d files (vendor files, below /etc's).
export const PACKAGED_SYSUSERS = '/usr/lib/sysusers.d/steward.conf';
export const PACKAGED_TMPFILES = '/usr/lib/tmpfiles.d/steward.conf';
// The package's own Node.js runtime, relative to /usr/lib/steward/<version>/; the units run it.
export const PACKAGED_NODE = 'node/bin/node';

export interface PackageSetupOptions {
  tools: SystemTools;
  onStep?: (s: Step) => void;
}

// Configures the packaged steward. Idempotent: a second run changes nothing (every step
// `unchanged`, `absent` or `ran`). Needs no systemd as PID 1 (a chroot or an image build): the
// tools it runs work offline; starting the helper is the postinst's.
export async function setUpPackagedSteward(opts: PackageSetupOptions): Promise<Step[]> {
  requireRoot('install --packaged');
  const paths = hostPaths('');
  const pkg = packageRoot();
  if (!pkg || !pkg.startsWith('/usr/lib/steward/')) {
    throw new StewardError('USAGE', `agentctl install --packaged is the Debian package's configure step; this agentctl runs from ${pkg ?? 'no package'}, not /usr/lib/steward/<version>`);
  }
  const steps: Step[] = [];
  const did = (step: string, action: Step['action'], detail: string) => {
    const s = { step, action, detail };
    steps.push(s);
    opts.onStep?.(s);
  };

  // Every input checked as `agentctl install` checks it, before the first change.
  const { config } = await checkInstallInputs(paths, { unitNode: path.join(pkg, PACKAGED_NODE) });

  // 1. What an earlier `agentctl install` left: its files in /etc would override the package's
  // (systemd reads /etc before /usr/lib), its code and launcher would run an older steward.
  for (const [src, target] of DROPPED_FILES) did(`earlier ${path.basename(target)}`, await removeIfOurs(target, path.join(pkg, 'systemd', src)), target);
  const launcher = await removeLauncher();
  did('earlier agentctl', launcher.action, launcher.detail);
  const hadLib = existsSync(LIB_DIR);
  // Why: the helper ran from there; the package's helper runs from /usr/lib/steward/<version>/.
  await removeTree(LIB_DIR);
  did('earlier code', hadLib ? 'removed' : 'absent', LIB_DIR);

  // 2. The user and group, then the folders of docs/design.md §2.
  await opts.tools.run('systemd-sysusers', [PACKAGED_SYSUSERS]);
  did('user steward', 'ran', `systemd-sysusers ${PACKAGED_SYSUSERS}`);
  await opts.tools.run('systemd-tmpfiles', ['--create', PACKAGED_TMPFILES]);
  did('folders', 'ran', `systemd-tmpfiles --create ${PACKAGED_TMPFILES}`);

  // 3. The helper key, a default config, the agent's first release.
  await makeKeyAndConfig(paths, config, did, PACKAGE_DEFAULT_CONFIG);
  const agent = await installAgentRelease(pkg, paths);
  did('agent release', agent.action, agent.detail);

  // 4. A trial of this version that reverted before is tried once more by the restart that follows
  // (dpkg-reconfigure, a reinstall): the operator asked for this package again.
  const version = path.basename(pkg);
  const forgot = await forgetPackageTrial(paths, version);
  did('package trial', forgot ? 'removed' : 'absent', forgot ? `${paths.selfDir}/package-tried named ${version}: its trial runs again` : `${paths.selfDir}/package-tried`);
  return steps;
}

// Removes `target` when it is the file `agentctl install` dropped: its first line is the first
// line of the package's own copy (a comment that has named the file since issue 6). Someone
// else's file of that name is left as it is.
async function removeIfOurs(target: string, ownCopy: string): Promise<Step['action']> {
  let have: Awaited<ReturnType<typeof readRegularFile>> = null;
  try {
    have = await readRegularFile(target, 1024 * 1024);
  } catch {
    return 'skipped'; // a symlink or a folder: not what install wrote
  }
  if (!have) return 'absent';
  const firstLine = (b: Buffer | string) => b.toString().split('\n', 1)[0];
  if (firstLine(have.bytes) !== firstLine(await fsp.readFile(ownCopy, 'utf8'))) return 'skipped';
  return removeIfPresent(target);
}
