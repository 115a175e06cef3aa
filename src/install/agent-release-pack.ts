import { constants as fsc, promises as fsp, readFileSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../core/errors.js';
import { AGENT_APP, versionSchema } from '../core/names.js';
import { RELEASE_FILE_NAME } from '../core/release-schemas.js';

// The agent as a release of the app `steward-agent` (issue 6): the tree its unit runs from
// /opt/steward/apps/steward-agent/current. The tree carries the agent's bundle (docs/design.md §15), which
// needs no node_modules, so an update of the agent brings all of its code along and a reinstall
// of steward's code under /opt/steward/lib never changes what a running agent runs.

export { AGENT_APP };
// Relative to the release root; the unit runs /usr/bin/node current/<this>. Releases made before
// the bundle (a node_modules tree) have their launcher at the same path, so one unit runs both.
export const AGENT_ENTRY = 'bin/steward-agent.js';
// The agent's bundle, which the launcher imports (scripts/bundle.ts writes it).
export const AGENT_BUNDLE = 'dist/bundle/steward-agent';

// The release file of the agent: no `start` (its unit starts it) and no health URL (it
// listens on nothing). Its probe on an enrolled host (docs/design.md §14): within timeoutMs the new
// agent's process confirms over helper.sock a heartbeat the control plane answered 2xx, then
// stays the same process for stableMs. 60 s leaves room for the agent's backoff (1, 2, 4, 8,
// 16 s) past a control plane that misses a few heartbeats. Not enrolled, it only stays up.
export function agentReleaseFile(version: string): Record<string, unknown> {
  return { name: AGENT_APP, version, health: { confirm: 'heartbeat', timeoutMs: 60_000, stableMs: 5000 } };
}

// The package version of the steward package at `pkgRoot`, checked as a release version.
export function packageVersion(pkgRoot: string): string {
  const pkg = JSON.parse(readFileSync(path.join(pkgRoot, 'package.json'), 'utf8')) as { version?: unknown };
  const v = versionSchema.safeParse(pkg.version);
  if (!v.success) throw new StewardError('RELEASE_INVALID', `${pkgRoot}/package.json: version ${JSON.stringify(pkg.version)} is not a release version`);
  return v.data;
}

// Lays out the agent's release tree from the steward package at `pkgRoot` into `dest` (which must
// not exist): steward-release.json, package.json (with `version`, which the agent reports),
// bin/steward-agent.js and the agent's bundle. Modes are normalized to 0644/0755.
export async function layOutAgentTree(pkgRoot: string, dest: string, version: string): Promise<void> {
  versionSchema.parse(version);
  await fsp.mkdir(dest, { mode: 0o755 });
  const pkg = JSON.parse(await fsp.readFile(path.join(pkgRoot, 'package.json'), 'utf8')) as Record<string, unknown>;
  // Only what running it needs: no scripts and no dependencies (the bundle holds them) to mislead
  // a reader. `type` makes node load the launcher and the bundle as ES modules.
  const slim = { name: pkg.name, version, description: pkg.description, type: pkg.type, license: pkg.license, engines: pkg.engines };
  await fsp.writeFile(path.join(dest, 'package.json'), JSON.stringify(slim, null, 2) + '\n', { mode: 0o644 });
  await fsp.writeFile(path.join(dest, RELEASE_FILE_NAME), JSON.stringify(agentReleaseFile(version), null, 2) + '\n', { mode: 0o644 });
  await copyInto(pkgRoot, dest, AGENT_ENTRY);
  await copyInto(pkgRoot, dest, AGENT_BUNDLE);
}

export { packTree } from '../platform/release-tree.js';

async function copyInto(srcRoot: string, destRoot: string, rel: string): Promise<void> {
  const from = path.join(srcRoot, rel);
  if (!(await fsp.lstat(from).catch(() => null))) {
    throw new StewardError('NOT_FOUND', `the agent release needs ${from}, which is missing (is steward built? npm run build)`);
  }
  await fsp.mkdir(path.dirname(path.join(destRoot, rel)), { recursive: true, mode: 0o755 });
  await copyNormalized(from, path.join(destRoot, rel));
}

// Copies a file, folder or symlink. Modes are normalized (folders 0755, files 0755 when
// executable by anyone, else 0644): a loose or tight umask in the checkout never reaches the
// release. Sockets, FIFOs and devices are left behind (staging would refuse them).
async function copyNormalized(from: string, to: string): Promise<void> {
  const st = await fsp.lstat(from);
  if (st.isSymbolicLink()) {
    await fsp.symlink(await fsp.readlink(from), to);
  } else if (st.isDirectory()) {
    await fsp.mkdir(to, { mode: 0o755 });
    await fsp.chmod(to, 0o755);
    for (const name of await fsp.readdir(from)) await copyNormalized(path.join(from, name), path.join(to, name));
  } else if (st.isFile()) {
    await fsp.copyFile(from, to, fsc.COPYFILE_EXCL);
    await fsp.chmod(to, st.mode & 0o111 ? 0o755 : 0o644);
  }
}
