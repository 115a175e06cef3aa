import { promises as fsp, readFileSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../core/errors.js';
import { versionSchema } from '../core/names.js';
import { RELEASE_FILE_NAME } from '../core/release-schemas.js';
import { SELF_APP } from '../core/self-schemas.js';
import * as tar from 'tar';
import { CODE_ITEMS, HOST_PROGRAMS } from '../core/package-layout.js';

// steward's own code as a release of the app `steward` (docs/design.md §14): what `npm run package` puts
// in /usr/lib/steward/<version>/ but the Node.js runtime, which the package's launcher provides,
// and the units and the launcher (systemd/), which belong to the package and never to a release.
export const STEWARD_RELEASE_ITEMS = CODE_ITEMS.filter((item) => item !== 'systemd');

// The release file of the app steward: no `start` (the launcher starts it) and no health URL:
// the candidate probes itself (docs/self-update.md).
export function stewardReleaseFile(version: string): Record<string, unknown> {
  return { name: SELF_APP, version, health: { stableMs: 5000 } };
}

// Lays out the release tree of the app steward from the built steward at `pkgRoot` into `dest`
// (which must not exist), with `version` in its package.json (steward's version is the one a
// helper reports and the trial checks). The launchers lose their `#!` line, as in the package.
export async function layOutStewardTree(pkgRoot: string, dest: string, version: string): Promise<void> {
  versionSchema.parse(version);
  await fsp.mkdir(dest, { mode: 0o755 });
  for (const item of STEWARD_RELEASE_ITEMS) {
    const from = path.join(pkgRoot, item);
    if (!(await fsp.lstat(from).catch(() => null))) {
      throw new StewardError('NOT_FOUND', `the steward release needs ${from}, which is missing (is steward built? npm run build)`);
    }
    await fsp.cp(from, path.join(dest, item), { recursive: true, verbatimSymlinks: true });
  }
  const pkgFile = path.join(dest, 'package.json');
  const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as Record<string, unknown>;
  await fsp.writeFile(pkgFile, `${JSON.stringify({ ...pkg, version }, null, 2)}\n`);
  for (const p of HOST_PROGRAMS) {
    const file = path.join(dest, 'bin', `${p}.js`);
    await fsp.writeFile(file, (await fsp.readFile(file, 'utf8')).replace(/^#!.*\n/, ''));
  }
  await fsp.writeFile(path.join(dest, RELEASE_FILE_NAME), `${JSON.stringify(stewardReleaseFile(version), null, 2)}\n`);
  await normalizeModes(dest);
}

// Packs a tree into a .tar.gz whose root is the tree's root (owners left out: the helper
// extracts everything as root:root).
export async function packTree(tree: string, outFile: string): Promise<void> {
  const names = (await fsp.readdir(tree)).sort();
  await tar.c({ gzip: true, cwd: tree, file: outFile, portable: true, noMtime: true }, names);
}

// Folders 0755, files 0755 when executable by anyone, else 0644: the checkout's umask never
// reaches the release.
async function normalizeModes(dir: string): Promise<void> {
  await fsp.chmod(dir, 0o755);
  for (const e of await fsp.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) await normalizeModes(p);
    else if (e.isFile()) await fsp.chmod(p, (await fsp.stat(p)).mode & 0o111 ? 0o755 : 0o644);
  }
}
