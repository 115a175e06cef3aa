// Where `agentctl install` puts steward itself (decided here, documented in docs/install.md).
// steward's code lives under /opt/steward/lib, beside the release store: /usr may be read-only
// (image-based hosts, containers), and the helper unit makes /opt/steward/lib read-only to itself.
export const LIB_DIR = '/opt/steward/lib';
export const OPT_DIR = '/opt/steward';
export const UNIT_DIR = '/etc/systemd/system';
export const HELPER_UNIT = 'steward-helper.service';
export const AGENT_UNIT = 'steward-agent.service';
export const SYSUSERS_FILE = '/etc/sysusers.d/steward.conf';
export const TMPFILES_FILE = '/etc/tmpfiles.d/steward.conf';
export const CONFIG_DIR = '/etc/steward';
// agentctl on the PATH (sudo's secure_path included): a launcher of LIB_DIR's (agentctl-launcher.ts).
export const LAUNCHER = '/usr/local/bin/agentctl';

// What of the package is copied (core/package-layout.ts).
export { CODE_ITEMS, HOST_PROGRAMS } from '../core/package-layout.js';

// The default host config: the agent as the app `steward-agent`, run by its own unit (docs/design.md §2).
// Every other setting has its documented default.
export const AGENT_APP_CONFIG = { runner: 'unit', unit: 'steward-agent.service' } as const;
export const DEFAULT_CONFIG = { apps: { 'steward-agent': AGENT_APP_CONFIG } };
// The Debian package's: steward itself as the app `steward` too (docs/design.md §14), since its unit runs
// the launcher, which an `agentctl install` unit does not (no trial could run there).
export const SELF_APP_CONFIG = { runner: 'self' } as const;
export const PACKAGE_DEFAULT_CONFIG = { apps: { ...DEFAULT_CONFIG.apps, steward: SELF_APP_CONFIG } };

// Config files dropped from the package's systemd/ folder: [source under systemd/, target].
export const DROPPED_FILES: Array<[string, string]> = [
  ['sysusers.d/steward.conf', SYSUSERS_FILE],
  ['tmpfiles.d/steward.conf', TMPFILES_FILE],
  [HELPER_UNIT, `${UNIT_DIR}/${HELPER_UNIT}`],
  [AGENT_UNIT, `${UNIT_DIR}/${AGENT_UNIT}`],
];

// Folders --purge removes, besides the units and the code: every byte of steward's state.
export const PURGED_DIRS = ['/var/lib/steward', '/var/lib/steward-agent', OPT_DIR, CONFIG_DIR, '/run/steward'];

// One thing install or uninstall did (or found already done). `--json` prints a list of these.
export interface Step {
  step: string;
  action: 'created' | 'updated' | 'unchanged' | 'ran' | 'removed' | 'absent' | 'skipped';
  detail: string;
}
