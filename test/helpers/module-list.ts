import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLE_DIR, metafileOf } from '../../scripts/bundle.js';
import { REPO } from './host.js';

// A loader hook that writes `LOADED <url>` to stderr for every module a node process resolves,
// static or dynamic (`await import()` on a rare path too): `args` go before the script.
export function moduleHook(): { args: string[]; loaded(stderr: string): string[]; cleanup(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-module-list-'));
  writeFileSync(
    path.join(dir, 'hooks.mjs'),
    "import { writeSync } from 'node:fs';\n" +
      'export async function resolve(spec, ctx, next) { const r = await next(spec, ctx); writeSync(2, `LOADED ${r.url}\\n`); return r; }\n',
  );
  writeFileSync(path.join(dir, 'register.mjs'), "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n");
  return {
    args: ['--import', path.join(dir, 'register.mjs')],
    loaded: (stderr) => [...stderr.matchAll(/^LOADED (.*)$/gm)].map((m) => m[1] as string),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

// The modules a node process resolves, listed by a loader hook: for tests that hold what a
// command or a daemon loads at start (start-up time and idle RSS, issue 8 rows 5 and 6).
export function modulesResolvedBy(args: string[]): { modules: string[]; status: number | null; stderr: string } {
  const hook = moduleHook();
  try {
    const r = spawnSync(process.execPath, [...hook.args, ...args], { encoding: 'utf8' });
    return { modules: hook.loaded(r.stderr), status: r.status, stderr: r.stderr };
  } finally {
    hook.cleanup();
  }
}

// A program's bundle as scripts/bundle.ts wrote it (dist/bundle/<program>/), read from its
// metafile: which source files each of its output files holds. A daemon runs its bundle, so what
// it loads is a list of the bundle's files; this maps them back to steward's modules and the
// packages' files that they hold, for the tests that hold what a program loads.
export interface Bundle {
  // The bundle's folder and its entry file (absolute paths).
  dir: string;
  entry: string;
  // Every source file (absolute path) that some output of the bundle holds: the entry, the
  // chunks it loads only when needed, and the extraction worker.
  sources(): string[];
  // What a process loaded, given the URLs a loader hook listed: the source files held by the
  // bundle's files among them, and every URL that is neither a node builtin, nor one of
  // `allowed` (absolute paths, such as the bin/ launcher), nor a file of the bundle.
  loaded(urls: string[], allowed?: string[]): { sources: string[]; outside: string[] };
}

export function bundleOf(program: string): Bundle {
  const dir = path.join(REPO, BUNDLE_DIR, program);
  const meta = JSON.parse(readFileSync(path.join(REPO, metafileOf(program)), 'utf8')) as { outputs: Record<string, { inputs: Record<string, unknown> }> };
  const held = new Map(Object.entries(meta.outputs).map(([out, o]) => [path.join(REPO, out), Object.keys(o.inputs).map((i) => path.join(REPO, i))]));
  return {
    dir,
    entry: path.join(dir, `${program}.js`),
    sources: () => [...new Set([...held.values()].flat())].sort(),
    loaded(urls, allowed = []) {
      const sources = new Set<string>();
      const outside = new Set<string>();
      for (const url of new Set(urls)) {
        if (url.startsWith('node:')) continue;
        const file = url.startsWith('file:') ? fileURLToPath(url) : url;
        const inputs = held.get(file);
        if (inputs) for (const i of inputs) sources.add(i);
        else if (!allowed.includes(file)) outside.add(url);
      }
      return { sources: [...sources].sort(), outside: [...outside].sort() };
    },
  };
}

// Whether a resolved module is classic zod (`zod`, `zod/v4`, `zod/v3` and what they load): the
// daemons load zod/mini and never classic zod (docs/design.md §15). zod/mini is zod/v4/mini and
// zod/v4/core, which classic zod loads too: only these modules tell the two apart.
export const isClassicZod = (url: string): boolean => /\/node_modules\/zod\/(?:index\.js$|v4\/index\.js$|v4\/classic\/|v3\/)/.test(url);
// Whether a resolved module is zod/mini's own (zod/mini, zod/v4/mini).
export const isZodMini = (url: string): boolean => /\/node_modules\/zod\/(?:mini\/|v4\/mini\/)/.test(url);
