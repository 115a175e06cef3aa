// steward-control's entry (the bundle's steward-control.js, which bin/steward-control.js runs): it
// turns on Node's compile cache first (src/platform/compile-cache.ts, the one agentctl uses, under
// the same rule) and only then loads the program, so that the cache covers every module the
// command runs (commander, the store, zod, the server) and not just those loaded after it.
import { useCompileCache } from '../../platform/compile-cache.js';
import { readOwnVersion } from '../../platform/own-version.js';
import { endQuietlyWhenStdoutCloses } from '../../platform/stdout-closed.js';
import { controlCommandWord } from './command-word.js';
import type { ControlRunner } from './program-base.js';

// The runner of each command module (src/control/cli/run/), by the words its module registers: a
// command run by name loads its runner alone. scripts/bundle.ts bundles each runner as one file
// of its own, holding commander, the program options and that command's code, with no chunk
// shared with another (what its subcommands run is still imported when one runs): Node 20 pays
// about 1 ms for each file of an ES module graph, and the chunks of the commands' shared modules
// made `steward-control --server URL nodes` 30 files (bench/README.md, control-cli). Help, a word
// that names no command and no command run main.ts (run/all.ts), which registers every command.
// main.ts's list and this one name the same commands (test/control/cli-lazy-commands.test.ts).
export const RUNNERS: Array<[names: string[], load: () => Promise<ControlRunner>]> = [
  [['init', 'migrate'], () => import('./run/init.js')],
  [['serve'], () => import('./run/serve.js')],
  [['backup', 'restore', 'copy'], () => import('./run/backup.js')],
  [['token'], () => import('./run/token.js')],
  [['keys'], () => import('./run/keys.js')],
  [['trust'], () => import('./run/trust.js')],
  [['release'], () => import('./run/release.js')],
  [['rollout'], () => import('./run/rollout.js')],
  [['target'], () => import('./run/target.js')],
  [['nodes'], () => import('./run/nodes.js')],
  [['receipts'], () => import('./run/receipts.js')],
  [['operator'], () => import('./run/operator.js')],
  [['audit'], () => import('./run/audit.js')],
  [['hook'], () => import('./run/hook.js')],
];

// Runs steward-control with `argv` and returns its exit code.
export async function runControlCli(argv: string[]): Promise<number> {
  // serve is a daemon: its stdout closing (a terminal gone) must not end it.
  if (!argv.includes('serve')) endQuietlyWhenStdoutCloses();
  // The version alone needs no program: it is answered before commander and the commands load.
  // Exit 0 is EXIT.ok (src/cli/error-message.ts), not imported: the runners hold that module.
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) {
    process.stdout.write(`${readOwnVersion()}\n`);
    return 0;
  }
  await useCompileCache();
  const word = controlCommandWord(argv);
  const runner = word === undefined ? undefined : RUNNERS.find(([names]) => names.includes(word));
  if (runner) return (await runner[1]()).runControlCli(argv, word as string);
  return (await import('./run/all.js')).runControlCli(argv);
}
