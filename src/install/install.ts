import { existsSync, promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../core/errors.js';
import { AGENT_APP } from '../core/names.js';
import type { HostConfig } from '../core/config-schema.js';
import { hostPaths, type HostPaths } from '../core/paths.js';
import { loadOrCreateHelperKey } from '../host/helper-key.js';
import { lookupGroup, lookupUser } from '../platform/users.js';
import { installAgentRelease } from './agent-release.js';
import { trustAgentKey } from './agent-key.js';
import { installLauncher } from './agentctl-launcher.js';
import { installCode } from './copy-code.js';
import { checkInstallInputs } from './install-inputs.js';
import {
  AGENT_APP_CONFIG, AGENT_UNIT, CODE_ITEMS, CONFIG_DIR, DEFAULT_CONFIG, DROPPED_FILES, HELPER_UNIT, LIB_DIR, SYSUSERS_FILE, TMPFILES_FILE, UNIT_DIR, type Step,
} from './install-layout.js';
import { checkRootFolder, writeIfChanged } from './root-files.js';
import { requireRoot, requireSystemd, type SystemTools } from './system-tools.js';

export interface InstallOptions {
  // Skip `systemctl enable --now steward-helper` (and any restart of a running helper).
  start: boolean;
  tools: SystemTools;
  // A PEM Ed25519 public key to trust for steward-agent releases (trusted-keys/steward-agent/).
  agentKey?: string | undefined;
  // Called with each step as it is done, for the one-line-per-step output.
  onStep?: (s: Step) => void;
}

// `agentctl install`: drops steward's code, units, sysusers.d and tmpfiles.d files, and calls the
// systemd tools to apply them; makes the helper key and a default config. Idempotent: a second run
// reports every step `unchanged` (the tools are run again; they change nothing either).
export async function installSteward(opts: InstallOptions): Promise<Step[]> {
  requireRoot('install');
  requireSystemd('install');
  const paths = hostPaths('');
  // Every input is checked before the first change: nothing is written for a bad one.
  const { pkg, agentKey, config } = await checkInstallInputs(paths, { agentKey: opts.agentKey });
  const steps: Step[] = [];
  const did = (step: string, action: Step['action'], detail: string) => {
    const s = { step, action, detail };
    steps.push(s);
    opts.onStep?.(s);
    return s;
  };
  const read = (rel: string) => fsp.readFile(path.join(pkg, 'systemd', rel));

  // 1. The user and group first: tmpfiles.d chowns folders to them.
  const sysusers = await writeIfChanged(SYSUSERS_FILE, await read('sysusers.d/steward.conf'), 0o644);
  did('sysusers.d', sysusers, SYSUSERS_FILE);
  const hadUser = (await lookupUser('steward')) !== null && (await lookupGroup('steward')) !== null;
  await opts.tools.run('systemd-sysusers', [SYSUSERS_FILE]);
  const user = await lookupUser('steward');
  if (!user) throw new StewardError('SYSTEM_COMMAND_FAILED', `systemd-sysusers ${SYSUSERS_FILE} ran but there is no user steward in /etc/passwd`);
  did('user steward', hadUser ? 'unchanged' : 'created', `systemd-sysusers: uid ${user.uid}, gid ${user.gid}, no login shell`);

  // 2. The folders of docs/design.md §2 with their owners and modes.
  const tmpfiles = await writeIfChanged(TMPFILES_FILE, await read('tmpfiles.d/steward.conf'), 0o644);
  did('tmpfiles.d', tmpfiles, TMPFILES_FILE);
  const tmpfilesText = (await fsp.readFile(TMPFILES_FILE, 'utf8'));
  const before = await folderFacts(tmpfilesText);
  await opts.tools.run('systemd-tmpfiles', ['--create', TMPFILES_FILE]);
  const after = await folderFacts(tmpfilesText);
  did('folders', before === after ? 'unchanged' : before.includes('missing') ? 'created' : 'updated', `systemd-tmpfiles --create ${TMPFILES_FILE}`);

  // 3. steward's own code.
  await checkRootFolder(path.dirname(LIB_DIR));
  const code = pkg === LIB_DIR ? 'unchanged' : await installCode(pkg, CODE_ITEMS, LIB_DIR);
  did('code', code, `${LIB_DIR} (from ${pkg})`);
  const launcher = await installLauncher();
  did('agentctl', launcher.action, launcher.detail);

  // 4. The units.
  let unitsChanged = false;
  const unitActions: Record<string, Step['action']> = {};
  for (const unit of [HELPER_UNIT, AGENT_UNIT]) {
    const a = await writeIfChanged(path.join(UNIT_DIR, unit), await read(unit), 0o644);
    unitActions[unit] = a;
    if (a !== 'unchanged') unitsChanged = true;
    did(`unit ${unit}`, a, path.join(UNIT_DIR, unit));
  }
  if (unitsChanged) {
    await opts.tools.run('systemctl', ['daemon-reload']);
    did('daemon-reload', 'ran', 'systemctl daemon-reload');
  } else {
    did('daemon-reload', 'skipped', 'no unit file changed');
  }

  // 5, 6. The helper key and a default host config.
  await makeKeyAndConfig(paths, config, did);
  if (config && !Object.prototype.hasOwnProperty.call(config.apps, AGENT_APP)) {
    did('config agent', 'skipped', `${paths.configFile} has no app ${AGENT_APP}: steward cannot update the agent until you add "${AGENT_APP}": ${JSON.stringify(AGENT_APP_CONFIG)} and restart ${HELPER_UNIT}`);
  }

  // 7. The agent as a release of the app steward-agent, and the key its updates must be signed by.
  const trust = await trustAgentKey(paths, agentKey);
  did('agent key', trust.action, trust.detail);
  const agent = await installAgentRelease(pkg, paths);
  did('agent release', agent.action, agent.detail);

  // 8. The helper running the installed code. The agent is enabled by the operator once the
  // host is enrolled (`agentctl enroll`, then `systemctl enable --now steward-agent`).
  const changed = code !== 'unchanged';
  if (!opts.start) {
    did('start', 'skipped', `--no-start: start it with systemctl enable --now ${HELPER_UNIT}`);
  } else {
    const enabled = (await opts.tools.run('systemctl', ['is-enabled', HELPER_UNIT], { allowFail: true })).stdout.trim() === 'enabled';
    const active = (await opts.tools.run('systemctl', ['is-active', HELPER_UNIT], { allowFail: true })).stdout.trim() === 'active';
    if (!enabled || !active) {
      await opts.tools.run('systemctl', ['enable', '--now', HELPER_UNIT]);
      did('start', 'ran', `systemctl enable --now ${HELPER_UNIT}`);
    } else if (changed || unitActions[HELPER_UNIT] !== 'unchanged') {
      // Why a restart is safe: KillMode=process, apps outlive the helper and the new one adopts them.
      await opts.tools.run('systemctl', ['restart', HELPER_UNIT]);
      did('start', 'ran', `systemctl restart ${HELPER_UNIT} (new code or unit; apps keep running)`);
    } else {
      did('start', 'unchanged', `${HELPER_UNIT} is enabled and active`);
    }
    const agentActive = (await opts.tools.run('systemctl', ['is-active', AGENT_UNIT], { allowFail: true })).stdout.trim() === 'active';
    if (agentActive && unitActions[AGENT_UNIT] !== 'unchanged') {
      // Only a running agent (an enrolled host) is restarted onto its new unit. New code in
      // /opt/steward/lib does not concern it: it runs its own release tree.
      await opts.tools.run('systemctl', ['try-restart', AGENT_UNIT]);
      did('agent', 'ran', `systemctl try-restart ${AGENT_UNIT} (new unit)`);
    }
  }
  return steps;
}

// The helper key (the helper would make it at its first start; enrollment needs it earlier) and
// a default host config (`defaults`), never overwriting one (`config` is the one there, or null).
// Shared with the Debian package's configure step (package-setup.ts), which adds the app steward.
export async function makeKeyAndConfig(paths: HostPaths, config: HostConfig | null, did: (step: string, action: Step['action'], detail: string) => void, defaults: { apps: Record<string, unknown> } = DEFAULT_CONFIG): Promise<void> {
  const hadKey = existsSync(paths.helperKey);
  const key = await loadOrCreateHelperKey(paths);
  did('helper key', hadKey ? 'unchanged' : 'created', `${paths.helperKey} (keyId ${key.keyId}), ${paths.helperPub}`);
  await checkRootFolder(CONFIG_DIR);
  if (config) {
    did('config', 'unchanged', `${paths.configFile} exists and is left as it is`);
  } else {
    await writeIfChanged(paths.configFile, Buffer.from(JSON.stringify(defaults, null, 2) + '\n'), 0o644);
    did('config', 'created', `${paths.configFile} with the apps ${Object.keys(defaults.apps).join(', ')}`);
  }
}

// Owner, group and mode of every folder a tmpfiles.d `d` line names, to tell whether
// systemd-tmpfiles changed anything.
async function folderFacts(tmpfiles: string): Promise<string> {
  const out: string[] = [];
  for (const line of tmpfiles.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[0] !== 'd' || !f[1]) continue;
    const st = await fsp.lstat(f[1]).catch(() => null);
    out.push(st ? `${f[1]} ${st.uid}:${st.gid} ${(st.mode & 0o7777).toString(8)}` : `${f[1]} missing`);
  }
  return out.join('\n');
}
