// steward-control_<version>_amd64.deb (docs/design.md §14, docs/package.md): the control plane's bundle
// in /usr/lib/steward-control/<version>/ with better-sqlite3 built for the packaged Node.js (the
// steward package's runtime), /usr/bin/steward-control, steward-control.service, its sysusers.d
// and tmpfiles.d files, its settings in /etc/steward-control/ (a conffile), a man page made from
// its commander definition, docs and maintainer scripts.
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { buildControlProgram } from '../../src/control/cli/main.js';
import { PACKAGED_NODE } from '../../src/install/package-setup.js';
import { buildDate, DEPENDS, fetchRuntime, finishDeb, packageVersion, run, shipCode, shipDocs, shipRuntime, stripElf, type PackageOptions, type PackageResult } from './deb.js';
import { manPage } from './man-page.js';
import { ADDON, sqliteAddon } from './sqlite-addon.js';
import { copyNormalized, gzip, writeFile } from './tree.js';

const NAME = 'steward-control';
const CODE = ['package.json', `bin/${NAME}.js`, `dist/bundle/${NAME}`];
// What the bundle loads from node_modules at run time (scripts/bundle.ts NATIVE): better-sqlite3
// and the packages its lib/ requires (bindings finds the addon); prebuild-install is install-time only.
const MODULES: Array<[string, string[]]> = [
  ['better-sqlite3', ['package.json', 'LICENSE', 'lib']],
  ['bindings', ['package.json', 'LICENSE.md', 'bindings.js']],
  ['file-uri-to-path', ['package.json', 'LICENSE', 'index.js']],
];
// The operator-facing docs beside the README, in /usr/share/doc/steward-control/, and the design
// they cite by section (docs/design.md §n).
const DOCS = ['control-plane.md', 'admin-api.md', 'dashboard.md', 'metrics.md', 'package.md', 'design.md'];
export const CONTROL_CONFFILE = '/etc/steward-control/steward-control.conf';

export interface ControlPackageOptions extends PackageOptions {
  // Compile better-sqlite3 for the packaged node when no build of it is cached (2 minutes of CPU);
  // false: throw AddonNotBuilt instead (the tests, which cannot afford it).
  buildAddon?: boolean;
}

// Builds steward-control_<version>_amd64.deb into `out` from the built checkout at `repo`.
export async function buildControlDeb(repo: string, out: string, opts: ControlPackageOptions = {}): Promise<PackageResult> {
  const { version } = packageVersion(repo, CODE, opts);
  const work = path.join(out, `.work-${NAME}`);
  rmSync(work, { recursive: true, force: true });
  const root = path.join(work, NAME);
  const libRel = `usr/lib/${NAME}/${version}`;
  const lib = `/${libRel}`;
  const at = (rel: string) => path.join(root, rel);
  const when = buildDate(repo);

  shipCode(repo, at(libRel), CODE, [NAME], version);
  const runtime = opts.runtime ?? fetchRuntime(repo, work);
  shipRuntime(runtime, at(libRel));
  for (const [name, items] of MODULES) {
    for (const item of items) copyNormalized(path.join(repo, 'node_modules', name, item), at(`${libRel}/node_modules/${name}/${item}`));
  }
  const addon = at(`${libRel}/node_modules/better-sqlite3/${ADDON}`);
  // 0644, as Debian ships a shared object (dlopen needs no x bit).
  writeFile(addon, readFileSync(sqliteAddon(repo, runtime, { build: opts.buildAddon ?? true })));
  stripElf(addon, 'shared');
  // The packaged program on the packaged node makes a database: the addon loads, nothing that
  // the bundle needs from node_modules is missing.
  const probe = path.join(work, 'probe.db');
  run(at(`${libRel}/${PACKAGED_NODE}`), [at(`${libRel}/bin/${NAME}.js`), '--db', probe, 'init']);

  writeFile(at(`usr/bin/${NAME}`), `#!/bin/sh\n# steward-control of the steward-control package: its own Node.js on its own code.\nexec ${lib}/${PACKAGED_NODE} ${lib}/bin/${NAME}.js "$@"\n`, 0o755);
  const pkgFile = (ext: string) => path.join(repo, `packaging/debian/${NAME}.${ext}`);
  copyNormalized(pkgFile('service'), at(`usr/lib/systemd/system/${NAME}.service`));
  copyNormalized(pkgFile('sysusers'), at(`usr/lib/sysusers.d/${NAME}.conf`));
  copyNormalized(pkgFile('tmpfiles'), at(`usr/lib/tmpfiles.d/${NAME}.conf`));
  copyNormalized(pkgFile('conf'), at(CONTROL_CONFFILE.slice(1)));
  copyNormalized(pkgFile('lintian-overrides'), at(`usr/share/lintian/overrides/${NAME}`));

  shipDocs(repo, root, NAME, version, when);
  writeFile(at(`usr/share/doc/${NAME}/README.md.gz`), gzip(readFileSync(path.join(repo, 'README.md'))));
  for (const d of DOCS) writeFile(at(`usr/share/doc/${NAME}/docs/${d}.gz`), gzip(readFileSync(path.join(repo, 'docs', d))));
  const seeAlso = ['agentctl(1)', 'steward-helper(8)', 'steward-agent(8)'];
  writeFile(at(`usr/share/man/man1/${NAME}.1.gz`), gzip(manPage(await buildControlProgram(), { version, date: when.toISOString().slice(0, 10), seeAlso, section: '1' })));

  const deb = finishDeb(repo, root, out, {
    name: NAME,
    version,
    depends: DEPENDS,
    conffiles: [CONTROL_CONFFILE],
    description: [
      'steward reference control plane: enrollment, releases, fleet rollouts',
      'steward-control serves the steward agents of a fleet: enrollment,',
      'heartbeats and signed receipts, a signed release catalog and its',
      'artifacts, and rollouts (canaries, then batches, halted at the first',
      'revert), with an admin API, a dashboard and Prometheus metrics. Its',
      'store is an embedded SQLite database or PostgreSQL.',
      '',
      'The package carries its own Node.js runtime.',
    ],
  }, opts.compression);
  rmSync(work, { recursive: true, force: true });
  return { deb, version };
}
