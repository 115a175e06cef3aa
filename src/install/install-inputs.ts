// Everything `agentctl install` reads and could refuse, checked before its first change (issue
// 15 item 13): a bad input used to fail after the user, units, code and config were written.
import { existsSync, promises as fsp } from 'node:fs';
import path from 'node:path';
import type { HostConfig } from '../core/config-schema.js';
import { StewardError } from '../core/errors.js';
import { trustedKeysFor, type HostPaths } from '../core/paths.js';
import { AGENT_APP } from '../core/names.js';
import { loadHostConfig } from '../host/config.js';
import { readHelperKey } from '../host/helper-key.js';
import { packageRoot } from '../platform/own-version.js';
import { folderTrustProblem } from '../platform/trusted-file.js';
import { systemAccounts } from '../platform/users.js';
import { readAgentKey, type AgentKey } from './agent-key.js';
import { packageVersion } from './agent-release-pack.js';
import { readAgentCurrent } from './agent-release.js';
import { CODE_ITEMS, CONFIG_DIR, DROPPED_FILES, LIB_DIR, UNIT_DIR } from './install-layout.js';

export interface InstallInputs {
  // The steward package install copies from.
  pkg: string;
  // The --agent-key to trust, checked; null without --agent-key.
  agentKey: AgentKey | null;
  // The host config already there, as the helper will load it; null when install makes it.
  config: HostConfig | null;
}

// Checks, reading only: the package and every file of it install drops or copies, the units' node,
// the --agent-key (a PEM Ed25519 public key; a private key is refused), every folder install
// writes into that exists already (root's, not writable by group or others, along its path),
// an existing host config (the trust rule, the schema, the apps' accounts), an existing helper
// key and the agent's `current`. Throws the first problem; returns what install goes on with.
// `unitNode` is the node the units run: /usr/bin/node for `agentctl install`, the package's own
// runtime for the Debian package.
export async function checkInstallInputs(paths: HostPaths, opts: { agentKey?: string | undefined; unitNode?: string }): Promise<InstallInputs> {
  const pkg = packageRoot();
  if (!pkg) throw new StewardError('INTERNAL', 'cannot find the steward package (package.json) to install from');
  packageVersion(pkg);
  for (const rel of [...CODE_ITEMS, ...DROPPED_FILES.map(([src]) => path.join('systemd', src))]) {
    if (!existsSync(path.join(pkg, rel))) throw new StewardError('NOT_FOUND', `the steward package at ${pkg} has no ${rel} (run npm ci there)`);
  }
  const unitNode = opts.unitNode ?? '/usr/bin/node';
  if (!existsSync(unitNode)) {
    throw new StewardError('CONFIG_INVALID', `the units run ${unitNode}, which does not exist here (this agentctl runs ${process.execPath}); install Node 20+ as ${unitNode}`);
  }
  const agentKey = opts.agentKey === undefined ? null : await readAgentKey(opts.agentKey);
  for (const dir of targetFolders(paths)) {
    // Why up front: install would refuse such a folder only when it reached it, after other writes.
    const why = await folderTrustProblem(dir, { from: '/', uid: 0 });
    if (why) throw new StewardError('ROOT_UNSAFE', `refusing to install into ${dir}: ${why}; every folder install writes into must be root's and not writable by group or others`);
  }
  const config = (await fsp.lstat(paths.configFile).then(() => true, () => false))
    ? await loadHostConfig(paths.configFile, { isRoot: true, accounts: systemAccounts, root: paths.root })
    : null;
  await readHelperKey(paths);
  await readAgentCurrent(paths);
  return { pkg, agentKey, config };
}

// The folders install writes files into (a missing one is made by install, root's, 0755).
function targetFolders(paths: HostPaths): string[] {
  const dropped = DROPPED_FILES.map(([, target]) => path.dirname(target));
  return [...new Set([...dropped, UNIT_DIR, CONFIG_DIR, trustedKeysFor(paths, AGENT_APP), path.dirname(LIB_DIR), paths.varLib, paths.keysDir, paths.appsDir])];
}
