import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// The modules a node process resolves, listed by a loader hook: for tests that hold what a
// command or a daemon loads at start (start-up time and idle RSS, issue 8 rows 5 and 6).
export function modulesResolvedBy(args: string[]): { modules: string[]; status: number | null; stderr: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-module-list-'));
  try {
    writeFileSync(
      path.join(dir, 'hooks.mjs'),
      "import { writeSync } from 'node:fs';\n" +
        'export async function resolve(spec, ctx, next) { const r = await next(spec, ctx); writeSync(2, `LOADED ${r.url}\\n`); return r; }\n',
    );
    writeFileSync(path.join(dir, 'register.mjs'), "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n");
    const r = spawnSync(process.execPath, ['--import', path.join(dir, 'register.mjs'), ...args], { encoding: 'utf8' });
    const modules = [...r.stderr.matchAll(/^LOADED (.*)$/gm)].map((m) => m[1] as string);
    return { modules, status: r.status, stderr: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
