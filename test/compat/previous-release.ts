// The previous steward release, built from this repository's history for the compatibility tests
// (docs/design.md §16: CI runs a fleet of the previous release's agents and helpers against the new control
// plane, and the reverse). Bump PREVIOUS_RELEASE when a release is cut: it is the commit the hosts
// of the fleet run while the control plane is upgraded before them.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO } from '../helpers/host.js';
import { transpileTree } from '../helpers/transpile-tree.js';

// main before receipt payload v2 (issue 18's logTail): hosts and control planes that know only v1.
export const PREVIOUS_RELEASE = '44023ba1053102f2270883c70850c356903b2b62';

export interface Build {
  dir: string;
  bin: { helper: string; agent: string; agentctl: string; control: string };
}

// Why there may be none: a checkout without history (a tarball, a shallow clone).
export function previousReleaseMissing(): string | null {
  const r = spawnSync('git', ['-C', REPO, 'cat-file', '-e', `${PREVIOUS_RELEASE}^{commit}`], { encoding: 'utf8' });
  if (r.error) return `git is not installed (${r.error.message})`;
  if (r.status !== 0) return `this checkout has no commit ${PREVIOUS_RELEASE.slice(0, 12)} (a shallow clone or a tarball): the previous release cannot be built`;
  return null;
}

// Builds the previous release in a temp folder with this checkout's node_modules (the same
// dependency majors) and `remove()` it afterwards. As `npm run build` does, less its type check
// and its tests (transpile-tree.ts; 0.9 s of CPU against tsc's 33 s), then the commit's own build
// steps copy the dashboard's files and bundle.
export async function buildPreviousRelease(): Promise<Build & { remove(): void }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `steward-previous-${PREVIOUS_RELEASE.slice(0, 8)}-`));
  const run = (cmd: string, args: string[], cwd: string) => {
    const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} in ${cwd} failed (${r.status}): ${r.stdout}${r.stderr}`);
  };
  try {
    const tree = path.join(dir, 'steward');
    mkdirSync(tree);
    run('sh', ['-c', 'git -C "$1" archive --format=tar "$2" | tar -x -C "$3"', 'sh', REPO, PREVIOUS_RELEASE, tree], dir);
    symlinkSync(path.join(REPO, 'node_modules'), path.join(tree, 'node_modules'));
    await transpileTree(tree, ['src', 'scripts']);
    run(process.execPath, ['scripts/copy-ui-files.js'], tree);
    run(process.execPath, ['dist/scripts/bundle.js'], tree);
    const bin = (name: string) => path.join(tree, 'bin', `${name}.js`);
    return { dir: tree, bin: { helper: bin('steward-helper'), agent: bin('steward-agent'), agentctl: bin('agentctl'), control: bin('steward-control') }, remove: () => rmSync(dir, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
