import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

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

// Whether a resolved module is classic zod (`zod`, `zod/v4`, `zod/v3` and what they load): the
// daemons load zod/mini and never classic zod (DESIGN §15). zod/mini is zod/v4/mini and
// zod/v4/core, which classic zod loads too: only these modules tell the two apart.
export const isClassicZod = (url: string): boolean => /\/node_modules\/zod\/(?:index\.js$|v4\/index\.js$|v4\/classic\/|v3\/)/.test(url);
// Whether a resolved module is zod/mini's own (zod/mini, zod/v4/mini).
export const isZodMini = (url: string): boolean => /\/node_modules\/zod\/(?:mini\/|v4\/mini\/)/.test(url);
