#!/usr/bin/env node
// CI only (.ci/run): puts a better-sqlite3 addon already built on this machine where
// prebuild-install, which better-sqlite3's install script runs first, looks for a downloaded
// prebuild (npm's cache, _prebuilds/), named for the ABI of the node that runs this script. The
// suite's own `npm ci` then installs it in a second instead of compiling SQLite again for two
// minutes (CI reaches no prebuilt binary: github.com is not among its registries). A build
// cache, as a CI's cache of ~/.npm would be: nothing of it reaches the packages or the code.
//
//   node scripts/cache-sqlite-prebuild.js
//
// The addon is the first of these that loads under this node: the one scripts/package/
// sqlite-addon.ts built for this ABI (its cache), then the checkout's own build. Exit 1 when
// neither does (the suite's npm ci then compiles, as on any fresh machine).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const require = createRequire(path.join(root, 'node_modules/better-sqlite3/package.json'));
const pkg = require('./package.json');
const cacheHome = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
const candidates = [
  path.join(cacheHome, 'steward-package', `better-sqlite3-${pkg.version}-node${process.versions.modules}`, 'better_sqlite3.node'),
  path.join(root, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'),
];
// It must load under this node: a wrong ABI in the cache would break every install.
const loads = (f) => existsSync(f) && spawnSync(process.execPath, ['-e', 'process.dlopen({ exports: {} }, process.argv[1])', f], { stdio: 'ignore' }).status === 0;
const addon = candidates.find(loads);
if (!addon) {
  console.error(`no better-sqlite3 ${pkg.version} addon that loads under node ${process.version} (ABI ${process.versions.modules}) at ${candidates.join(' or ')}`);
  process.exit(1);
}
// prebuild-install's own naming: its options for the package, its URL, its cache path.
const rc = require('prebuild-install/rc.js');
const util = require('prebuild-install/util.js');
const opts = rc(pkg);
opts.pkg = pkg;
const cached = util.cachedPrebuild(util.getDownloadUrl(opts));
const work = mkdtempSync(path.join(os.tmpdir(), 'steward-prebuild-'));
try {
  mkdirSync(path.join(work, 'build/Release'), { recursive: true });
  copyFileSync(addon, path.join(work, 'build/Release/better_sqlite3.node'));
  mkdirSync(path.dirname(cached), { recursive: true });
  execFileSync('tar', ['-czf', `${cached}.tmp`, '-C', work, 'build']);
  renameSync(`${cached}.tmp`, cached);
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(`${addon} -> ${cached}`);
