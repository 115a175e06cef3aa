// Node's compile cache for a command-line program (Node 22.1 and later: module.enableCompileCache):
// V8's code for each module it loads, kept between runs, so that a run compiles only the modules
// that changed. It takes about 13 ms off each agentctl run on Node 24 here (docs/agentctl.md).
//
// A code cache is code, and agentctl runs as root: Node checks that a cached entry matches its
// module's source, not who wrote the entry. So the cache is used only in a folder that nobody
// but this user can write: a real folder (not a symlink) owned by this user, mode 0700, and
// every folder above it owned by root or this user and writable by nobody else unless sticky
// (/tmp: nobody else can rename what this user made there), the rule of trusted-folder.ts for
// the folders above a trusted one. Anything else runs without it: the cache only saves time,
// and a run never fails for the want of one.
import module from 'node:module';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { folderTrustProblem, type TrustScope } from './trusted-folder.js';

export type CompileCache = { state: 'on'; dir: string } | { state: 'off'; why: string };

// The cache's folder: $XDG_CACHE_HOME/steward/compile-cache when that is an absolute path (the
// XDG base directory rule), else ~/.cache/steward/compile-cache; null when there is no home. One
// folder serves every steward program: Node keys each entry by its module's path and source.
export function compileCacheDir(env: NodeJS.ProcessEnv, home: string): string | null {
  const xdg = env.XDG_CACHE_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : home && path.isAbsolute(home) ? path.join(home, '.cache') : null;
  return base === null ? null : path.join(base, 'steward', 'compile-cache');
}

// What keeps `dir` from holding this user's code cache, or null: read after the folder was made.
export async function compileCacheProblem(dir: string, uid: number): Promise<string | null> {
  const st = await fsp.lstat(dir);
  if (st.isSymbolicLink()) return `${dir} is a symlink`;
  if (!st.isDirectory()) return `${dir} is not a folder`;
  if (st.uid !== uid) return `${dir} is owned by uid ${st.uid}, not ${uid}`;
  if ((st.mode & 0o077) !== 0) return `${dir} is open to group or others (mode ${(st.mode & 0o7777).toString(8)}, not 700)`;
  return folderTrustProblem(dir, cacheScope(dir, uid));
}

const cacheScope = (dir: string, uid: number): TrustScope => ({ from: dir, uid, above: true });

// Makes the cache's folder `dir` for the user `uid` when the rule above allows it: its path, or
// why not. A folder that was there keeps its mode (one open to others is refused, not changed).
export async function prepareCompileCacheDir(dir: string, uid: number): Promise<{ dir: string } | { why: string }> {
  try {
    // Why checked before the mkdir too: a folder on the way that another user could write (a
    // symlink planted there) would make root create folders where that user chose.
    const above = await folderTrustProblem(dir, cacheScope(dir, uid));
    if (above) return { why: above };
    // Why 0700: only this user may write code this user runs (mkdir gives each folder it makes
    // this mode, less the umask).
    await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    const why = await compileCacheProblem(dir, uid);
    return why ? { why } : { dir };
  } catch (err) {
    return { why: `cannot use ${dir}: ${(err as Error).message}` };
  }
}

// Turns on the compile cache when this Node.js has one and the rule above holds; says why not
// otherwise. Call it before importing the modules it should cover: a module already loaded was
// compiled without it. NODE_DISABLE_COMPILE_CACHE turns it off, as it does Node's own.
export async function useCompileCache(env: NodeJS.ProcessEnv = process.env): Promise<CompileCache> {
  // Why typed by hand: @types/node of Node 20 has no enableCompileCache.
  const enable = (module as unknown as { enableCompileCache?: (dir: string) => { status: number; message?: string; directory?: string } }).enableCompileCache;
  if (typeof enable !== 'function') return { state: 'off', why: `Node.js ${process.version} has no compile cache (22.1 and later have one)` };
  if (env.NODE_DISABLE_COMPILE_CACHE) return { state: 'off', why: 'NODE_DISABLE_COMPILE_CACHE is set' };
  const dir = compileCacheDir(env, os.homedir());
  if (dir === null) return { state: 'off', why: 'this user has no home folder' };
  const made = await prepareCompileCacheDir(dir, process.geteuid?.() ?? 0);
  if ('why' in made) return { state: 'off', why: made.why };
  const r = enable(dir);
  const { ENABLED, ALREADY_ENABLED } = (module as unknown as { constants: { compileCacheStatus: Record<string, number> } }).constants.compileCacheStatus;
  if (r.status === ENABLED) return { state: 'on', dir };
  // NODE_COMPILE_CACHE named a folder of the caller's choosing, and Node opened it at start.
  if (r.status === ALREADY_ENABLED) return { state: 'on', dir: r.directory ?? dir };
  return { state: 'off', why: r.message ?? `Node.js did not enable the compile cache in ${dir}` };
}
