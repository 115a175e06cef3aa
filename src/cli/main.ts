// agentctl's entry (the bundle's agentctl.js, which bin/agentctl.js runs): it turns on Node's
// compile cache first and only then loads the program, so that the cache covers every module
// agentctl runs (commander, the command's module, zod) and not just those loaded after it.
import { useCompileCache } from '../platform/compile-cache.js';
import { endQuietlyWhenStdoutCloses } from '../platform/stdout-closed.js';
import { commandWord } from './command-word.js';
import type { Register } from './lazy-commands.js';

export interface Runner {
  // The command module's register function (what program.ts registers for the same words).
  register: Register;
  runCli(argv: string[]): Promise<number>;
}

// The runner of each command module (src/cli/run/), by the words its module registers: a command
// run by name loads its runner alone. scripts/bundle.ts bundles each runner as one file of its
// own, holding commander, the global options and that command's code, with no chunk shared with
// another: Node 20 pays about 1 ms for each file of an ES module graph, and the chunks the
// commands shared made `agentctl status` twelve files (bench/README.md, status-cli). Help, a
// word that names no command, --version, `completion` (which lists every command), and `doctor`
// and `install`, large and rarely run (a runner of their own would add ~0.9 MB to the package),
// run program.ts instead (run/all.ts), which registers the commands it needs as before.
// program.ts's list and this one register the same commands (test/cli/lazy-commands.test.ts).
export const RUNNERS: Array<[names: string[], load: () => Promise<Runner>]> = [
  [['status'], () => import('./run/status.js')],
  [['stage'], () => import('./run/stage.js')],
  [['releases'], () => import('./run/releases.js')],
  [['update'], () => import('./run/update.js')],
  [['rollback', 'recover'], () => import('./run/rollback.js')],
  [['prune', 'hold', 'release-hold', 'verify'], () => import('./run/maintenance.js')],
  [['receipts'], () => import('./run/receipts.js')],
  [['start', 'stop', 'restart'], () => import('./run/run-state.js')],
  [['logs'], () => import('./run/logs.js')],
  [['enroll', 'trust'], () => import('./run/enroll.js')],
];

// Runs agentctl with `argv` and returns its exit code.
export async function runCli(argv: string[]): Promise<number> {
  endQuietlyWhenStdoutCloses();
  await useCompileCache();
  const word = commandWord(argv);
  const runner = word === undefined ? undefined : RUNNERS.find(([names]) => names.includes(word));
  return (await (runner ? runner[1]() : import('./run/all.js'))).runCli(argv);
}
