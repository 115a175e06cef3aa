import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CONTROL_BIN } from '../helpers/serve-process.js';
import { bundleOf, isClassicZod, moduleHook } from '../helpers/module-list.js';

// What a steward-control run loads is most of its CPU (the test suite runs it about a thousand
// times, and operators' scripts in loops): its command modules only name their subcommands and
// options, and what a subcommand runs is imported when it runs (src/control/cli/main.ts). Each
// test runs the real launcher under a loader hook that lists every module it resolves, mapped back
// to the modules the bundle's files hold by the bundle's metafile (docs/design.md §15).

// The source modules a run of steward-control with `args` (and `env`) loaded, its exit code and
// output. better-sqlite3 is the one file it may load from outside its bundle (scripts/bundle.ts).
function controlModules(args: string[], env: NodeJS.ProcessEnv = {}): { modules: string[]; files: string[]; status: number | null; stdout: string; stderr: string } {
  const hook = moduleHook();
  try {
    const r = spawnSync(process.execPath, [...hook.args, CONTROL_BIN, ...args], { encoding: 'utf8', env: { ...process.env, STEWARD_CONTROL_DB: '', STEWARD_CONTROL_URL: '', STEWARD_CONTROL_TOKEN: '', ...env } });
    const bundle = bundleOf('steward-control');
    const urls = hook.loaded(r.stderr);
    const { sources, outside } = bundle.loaded(urls, [CONTROL_BIN]);
    assert.deepEqual(outside.filter((u) => !u.includes('/node_modules/better-sqlite3/')), [], "steward-control loads no file but its launcher, its bundle's and better-sqlite3");
    const files = [...new Set(urls.filter((u) => u.startsWith('file:') && fileURLToPath(u).startsWith(bundle.dir + path.sep)).map((u) => path.basename(fileURLToPath(u))))].sort();
    return { modules: sources, files, status: r.status, stdout: r.stdout, stderr: r.stderr };
  } finally {
    hook.cleanup();
  }
}

const some = (modules: string[], part: string) => modules.filter((u) => u.includes(part));
const ZOD = '/node_modules/zod/';
// What only a command run on the database needs.
const STORE = ['/control/store/open-store.js', '/control/store/sqlite/'];
// What only a command run through --server needs.
const HTTP_CLIENT = '/platform/http-request.js';

test('steward-control --help registers every command but loads no operation, no zod, no store, no server', () => {
  const { modules, status, stderr } = controlModules(['--help']);
  assert.equal(status, 0, stderr);
  const commands = some(modules, '/control/cli/commands/').map((u) => path.basename(u)).sort();
  assert.deepEqual(commands, ['audit.js', 'backup.js', 'hook.js', 'init.js', 'keys.js', 'nodes.js', 'operator.js', 'receipts.js', 'release.js', 'rollout.js', 'serve.js', 'target.js', 'token.js', 'trust.js'], `every command's module, and serve's code (serve-run.js) not:\n${stderr}`);
  for (const heavy of [ZOD, ...STORE, HTTP_CLIENT, '-ops.js', '/control/operations/inputs.js', '/control/server/control-server.js', '/control/admin/', '/node_modules/tar/', '/node_modules/debug/']) {
    assert.deepEqual(some(modules, heavy), [], `--help loads ${heavy}`);
  }
});

test('a command through --server loads its operation and the HTTP client, but not the store nor the other operations', () => {
  // Nothing listens on port 1: the command fails to reach the server after loading what it runs.
  const { modules, files, stdout, stderr } = controlModules(['--server', 'http://127.0.0.1:1', 'nodes', '--json'], { STEWARD_CONTROL_TOKEN: `so_${'A'.repeat(32)}` });
  assert.match(stdout, /"CONTROL_PLANE_UNREACHABLE"/, stderr);
  assert.ok(some(modules, HTTP_CLIENT).length, `the hook saw the request made:\n${stderr}`);
  assert.deepEqual(some(modules, '/control/operations/').map((u) => path.basename(u)).sort(), ['inputs.js', 'node-ops.js', 'operation.js', 'paging.js']);
  for (const heavy of [...STORE, '/control/rollouts/', '/control/catalog/add-release.js']) assert.deepEqual(some(modules, heavy), [], `nodes --server loads ${heavy}`);
  assert.deepEqual(modules.filter(isClassicZod), [], 'steward-control loads classic zod');
  assertRunnerFiles(files, 'run-nodes.js');
});

test('hook list through --server loads its operation and the HTTP client, not the store, the deliverer nor the targets', () => {
  const { modules, files, stdout, stderr } = controlModules(['--server', 'http://127.0.0.1:1', 'hook', 'list', '--json'], { STEWARD_CONTROL_TOKEN: `so_${'A'.repeat(32)}` });
  assert.match(stdout, /"CONTROL_PLANE_UNREACHABLE"/, stderr);
  assert.deepEqual(some(modules, '/control/operations/').map((u) => path.basename(u)).sort(), ['hook-ops.js', 'inputs.js', 'operation.js']);
  for (const heavy of [...STORE, '/control/rollouts/', '/control/targets/', '/control/hooks/deliver-hooks.js']) assert.deepEqual(some(modules, heavy), [], `hook list --server loads ${heavy}`);
  assertRunnerFiles(files, 'run-hook.js');
});

// A command named on the command line runs its runner (src/control/cli/start.ts): the entry, that
// runner and the chunks of what its subcommand imports when it runs, no file of the full program
// (run-all.js and the commands' chunks) nor another runner. Each file of an ES module graph costs
// Node 20 about 1 ms: through the full program `nodes --server` was 30 files, `rollout status
// --db` 39.
function assertRunnerFiles(files: string[], runner: string): void {
  assert.deepEqual(files.filter((f) => f.startsWith('run-')), [runner], files.join(' '));
  assert.ok(files.includes('steward-control.js'), files.join(' '));
  assert.ok(files.length <= 14, `${files.length} files: ${files.join(' ')}`);
}

test('a command on the database loads the store and its operation, but not the HTTP client', () => {
  const { modules, files, status, stderr } = controlModules(['--db', path.join(os.tmpdir(), 'steward-no-such-control.db'), 'rollout', 'status']);
  assert.notEqual(status, 0, 'there is no database to read');
  assert.ok(some(modules, '/control/store/open-store.js').length, `the hook saw the store loaded:\n${stderr}`);
  assert.ok(some(modules, '/control/operations/rollout-ops.js').length, 'its operation is loaded');
  for (const heavy of [HTTP_CLIENT, '/control/operations/node-ops.js', '/control/operations/release-ops.js', '/control/server/', '/node_modules/tar/']) {
    assert.deepEqual(some(modules, heavy), [], `rollout status --db loads ${heavy}`);
  }
  assert.deepEqual(modules.filter(isClassicZod), [], 'steward-control loads classic zod');
  assertRunnerFiles(files, 'run-rollout.js');
});
