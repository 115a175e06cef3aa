import path from 'node:path';
import { hostConfigSchema, type AppConfig, type HostConfig } from '../core/config-schema.js';
import { StewardError } from '../core/errors.js';
import { findOverlap, type SocketDecl } from '../core/listen-address.js';
import { mustParse } from '../core/must-parse.js';
import { SELF_APP } from '../core/self-schemas.js';
import { readFileNoFollow } from '../platform/fs-atomic.js';
import { readTrustedFile, trustRule, trustScope, type TrustScope } from '../platform/trusted-file.js';

const MAX_CONFIG_BYTES = 1024 * 1024;

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

// Reads and validates the host config; errors name the file and the key. The file must pass the
// trust rule (platform/trusted-file.ts: owned by root, or by this user when not root, and not
// writable by group or others, nor any folder above it from the root prefix `root` down, or
// from its own folder when no root is given), unless `checkOwner` is false (`agentctl doctor`
// reports that itself).
export async function loadHostConfig(
  file: string,
  opts: { isRoot: boolean; accounts: AccountLookup; root?: string; checkOwner?: boolean },
): Promise<HostConfig> {
  const raw = await readConfigBytes(file, opts.checkOwner === false ? null : trustScope(path.dirname(file), opts.root));
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new StewardError('CONFIG_INVALID', `${file}: not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  const config = mustParse(hostConfigSchema, json, 'CONFIG_INVALID', file);
  checkSelfApp(file, config);
  checkSockets(file, config);
  await checkAppAccounts(file, config, opts);
  return config;
}

// The runner `self` is the app steward's alone, and steward is only ever that (docs/design.md §14): a
// steward run as a process app would be started by the helper it replaces.
function checkSelfApp(file: string, config: HostConfig): void {
  for (const [name, app] of Object.entries(config.apps)) {
    if ((name === SELF_APP) !== (app.runner === 'self')) {
      throw new StewardError('CONFIG_INVALID', `${file}: apps.${name}: the runner "self" is the app ${SELF_APP}'s, and ${SELF_APP} has no other runner`);
    }
  }
}

// Two apps (or one app twice) cannot listen on one address: the second bind would fail at some
// later start, so the file is refused whole, naming both.
function checkSockets(file: string, config: HostConfig): void {
  const clash = findOverlap(config.apps as Record<string, { sockets?: SocketDecl[] }>);
  if (clash) throw new StewardError('CONFIG_INVALID', `${file}: ${clash} are the same address: each socket can be bound once`);
}

// The bytes of the host config, through O_NOFOLLOW; with a scope, only if the trust rule holds.
async function readConfigBytes(file: string, trust: TrustScope | null): Promise<Buffer> {
  let bytes: Buffer | null;
  try {
    if (trust) {
      const got = await readTrustedFile(file, trust, MAX_CONFIG_BYTES);
      // Why: root reads this file as config, so nobody but root may be able to write it.
      if (got.state === 'untrusted') throw new StewardError('CONFIG_INVALID', `${file} is not trusted: ${got.why}; ${trustRule(trust)}`);
      bytes = got.state === 'ok' ? got.bytes : null;
    } else {
      bytes = await readFileNoFollow(file, MAX_CONFIG_BYTES);
    }
  } catch (err) {
    if (err instanceof StewardError) throw err;
    throw new StewardError('CONFIG_INVALID', `${file}: ${(err as Error).message}`, { cause: err });
  }
  if (bytes === null) throw new StewardError('CONFIG_INVALID', `${file}: the host config does not exist`);
  return bytes;
}

// docs/design.md §2: as root, process apps name a user and group, neither uid/gid 0.
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
