import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { BIN } from '../helpers/host.js';

// What `agentctl status` loads is most of its start-up time (bench/status-cli, issue 8 row 6):
// zod alone was ~100 ms of CPU a run. These run the real CLI under a loader hook that lists every
// module it resolves, and hold that status reaches none of the heavy ones.

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-status-startup-'));
after(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(
  path.join(dir, 'hooks.mjs'),
  "import { writeSync } from 'node:fs';\n" +
    'export async function resolve(spec, ctx, next) { const r = await next(spec, ctx); writeSync(2, `LOADED ${r.url}\\n`); return r; }\n',
);
writeFileSync(path.join(dir, 'register.mjs'), "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n");

// The modules `agentctl <argv>` resolves (it fails to reach a helper under an empty root; the
// error path is loaded too).
export function modulesOf(argv: string[]): string[] {
  const r = spawnSync(process.execPath, ['--import', path.join(dir, 'register.mjs'), BIN.agentctl, '--root', path.join(dir, 'no-root'), ...argv], {
    encoding: 'utf8',
  });
  const loaded = [...r.stderr.matchAll(/^LOADED (.*)$/gm)].map((m) => m[1] as string);
  assert.ok(loaded.some((u) => u.endsWith('/cli/commands/status.js')), `the hook saw the CLI load:\n${r.stderr}`);
  return loaded;
}

test('agentctl status loads neither zod nor the modules of other commands', () => {
  const loaded = modulesOf(['status', '--json']);
  for (const heavy of ['/node_modules/zod/', '/node_modules/tar/', '/node_modules/execa/', '/node_modules/proper-lockfile/', '/node_modules/debug/', '/protocol/schemas.js', '/core/names.js']) {
    assert.deepEqual(loaded.filter((u) => u.includes(heavy)), [], `agentctl status loads ${heavy}`);
  }
});
