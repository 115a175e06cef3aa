import { promises as fsp } from 'node:fs';
import { checkHostConfig } from '../core/config-check.js';
import type { AppConfig, HostConfig } from '../core/config-schema.js';
import { StewardError } from '../core/errors.js';
import { readFileNoFollow } from '../platform/fs-atomic.js';

export interface Identity {
  name: string;
  id: number;
}

// How the config check looks up users and groups (the host's /etc/passwd and /etc/group).
export interface AccountLookup {
  // Returns the user's uid, or null when there is no such user.
  user(name: string): Promise<Identity | null>;
  // Returns the group's gid, or null when there is no such group.
  group(name: string): Promise<Identity | null>;
}

// Reads and validates the host config; errors name the file and the key. As root it also checks
// the file's owner and mode unless `checkOwner` is false (`agentctl doctor` reports those itself).
export async function loadHostConfig(file: string, opts: { isRoot: boolean; accounts: AccountLookup; checkOwner?: boolean }): Promise<HostConfig> {
  let raw: Buffer | null;
  try {
    raw = await readFileNoFollow(file, 1024 * 1024);
  } catch (err) {
    throw new StewardError('CONFIG_INVALID', `${file}: ${(err as Error).message}`, { cause: err });
  }
  if (raw === null) throw new StewardError('CONFIG_INVALID', `${file}: the host config does not exist`);
  if (opts.isRoot && opts.checkOwner !== false) await checkConfigFileOwner(file);
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new StewardError('CONFIG_INVALID', `${file}: not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  // Checked without zod (core/config-check.ts): the agent must not load it at start. A refused
  // config is explained by the zod schema, loaded only then.
  const config = checkHostConfig(json);
  if (config === null) {
    const { formatIssues, hostConfigSchema } = await import('../core/config-schema.js');
    const parsed = hostConfigSchema.safeParse(json);
    throw new StewardError('CONFIG_INVALID', `${file}: ${parsed.success ? 'refused by the config check' : formatIssues(parsed.error.issues)}`);
  }
  await checkAppAccounts(file, config, opts);
  return config;
}

// Root reads this file as config, so nobody but root may be able to write it.
async function checkConfigFileOwner(file: string): Promise<void> {
  const st = await fsp.lstat(file);
  if (st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw new StewardError(
      'CONFIG_INVALID',
      `${file}: must be owned by root and not writable by group or others (uid ${st.uid}, mode ${(st.mode & 0o777).toString(8)})`,
    );
  }
}

// DESIGN §2: as root, process apps name a user and group, neither uid/gid 0.
async function checkAppAccounts(file: string, config: HostConfig, opts: { isRoot: boolean; accounts: AccountLookup }): Promise<void> {
  for (const [name, app] of Object.entries(config.apps)) {
    if (app.runner !== 'process') continue;
    if (!opts.isRoot) continue;
    if (!app.user || !app.group) {
      throw new StewardError('CONFIG_INVALID', `${file}: apps.${name}: "user" and "group" are required for process apps when the helper runs as root`);
    }
    const user = await opts.accounts.user(app.user);
    if (!user) throw new StewardError('CONFIG_INVALID', `${file}: apps.${name}.user: no user named ${app.user}`);
    if (user.id === 0) throw new StewardError('CONFIG_INVALID', `${file}: apps.${name}.user: ${app.user} is uid 0; apps never run as root`);
    const group = await opts.accounts.group(app.group);
    if (!group) throw new StewardError('CONFIG_INVALID', `${file}: apps.${name}.group: no group named ${app.group}`);
    if (group.id === 0) throw new StewardError('CONFIG_INVALID', `${file}: apps.${name}.group: ${app.group} is gid 0; apps never run as root`);
  }
}

// The config of `app`, or UNKNOWN_APP when the host config does not name it.
export function requireApp(config: HostConfig, app: string): AppConfig {
  const cfg = config.apps[app];
  if (!cfg) throw new StewardError('UNKNOWN_APP', `app ${app} is not in the host config`);
  return cfg;
}
