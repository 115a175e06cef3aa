import { Option, type Command } from 'commander';
import { StewardError } from '../../core/errors.js';
import { installSteward } from '../../install/install.js';
import { setUpPackagedSteward } from '../../install/package-setup.js';
import type { Step } from '../../install/install-layout.js';
import { realSystemTools } from '../../install/system-tools.js';
import { uninstallSteward } from '../../install/uninstall.js';
import { checkPackagedHelper } from '../package-check.js';
import { readOwnVersion } from '../../platform/own-version.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { printJson, printLines } from '../output.js';

const CHANGES: ReadonlyArray<Step['action']> = ['created', 'updated', 'ran', 'removed'];

function printStep(s: Step): void {
  printLines([`${s.action.padEnd(9)} ${s.step.padEnd(30)} ${s.detail}`]);
}

// Install and uninstall act on the real host only: a root prefix makes no sense for units.
function refusePrefix(g: GlobalOptions, command: string): void {
  if (g.root) throw new StewardError('USAGE', `agentctl ${command} installs onto this host; --root is not supported`);
}

// `agentctl install [--no-start]` and `agentctl uninstall [--purge]` (docs/design.md §8, issue 6).
export function registerInstall(program: Command): void {
  program
    .command('install')
    .description('install steward on this host as systemd units (root): code, units, user, folders, helper key, default config, the agent release')
    .option('--no-start', 'do not enable and start steward-helper.service')
    .option('--agent-key <pem>', 'trust this Ed25519 release public key (PEM) for steward-agent updates')
    // The Debian package's postinst step (docs/package.md), not for operators: hidden.
    .addOption(new Option('--packaged', 'configure the installed Debian package (its postinst runs this)').hideHelp())
    .addOption(new Option('--check-running', "after the postinst's restart: fail when the helper runs an older steward than the package (its trial reverted)").hideHelp())
    .action(async (o: { start: boolean; agentKey?: string; packaged?: boolean; checkRunning?: boolean }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      refusePrefix(g, 'install');
      if (o.packaged && o.checkRunning) {
        const ctx = await cliContext(g);
        const version = readOwnVersion();
        const runs = await checkPackagedHelper(version, { status: () => ctx.helper.status({}), sleep: (ms) => new Promise((r) => setTimeout(r, ms)), now: () => Date.now() });
        if (g.json) printJson({ ok: true, version, runs });
        else process.stdout.write(`steward-helper runs steward ${runs} (the package is ${version})\n`);
        return;
      }
      if (o.packaged) {
        const steps = await setUpPackagedSteward({ tools: realSystemTools, ...(g.json ? {} : { onStep: printStep }) });
        if (g.json) printJson({ ok: true, steps });
        return;
      }
      const steps = await installSteward({ start: o.start, agentKey: o.agentKey, tools: realSystemTools, ...(g.json ? {} : { onStep: printStep }) });
      const changed = steps.some((s) => CHANGES.includes(s.action) && s.step !== 'folders');
      if (g.json) return printJson({ ok: true, changed, steps });
      process.stdout.write(changed ? 'steward is installed.\n' : 'nothing to do: steward is installed and up to date.\n');
      process.stdout.write('next: agentctl enroll --control-plane URL --token T, then systemctl enable --now steward-agent\n');
    });
  program
    .command('uninstall')
    .description('stop and disable steward units and remove what install dropped (root); --purge also removes all state')
    .option('--purge', 'ALSO REMOVE /var/lib/steward, /var/lib/steward-agent, /opt/steward (release trees), /etc/steward')
    .action(async (o: { purge?: boolean }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      refusePrefix(g, 'uninstall');
      if (o.purge && !g.json) {
        process.stderr.write('agentctl: PURGE: removing every release tree, journal, receipt, key, the host config and the node identity of this host\n');
      }
      const steps = await uninstallSteward({ purge: !!o.purge, tools: realSystemTools, ...(g.json ? {} : { onStep: printStep }) });
      if (g.json) return printJson({ ok: true, purged: !!o.purge, steps });
      process.stdout.write(o.purge
        ? 'steward is uninstalled and PURGED. Kept: the user and group steward, /var/lib/steward-apps (app data), /var/log/steward.\n'
        : 'steward is uninstalled; its state is kept (agentctl install resumes it; uninstall --purge removes it).\n');
    });
}
