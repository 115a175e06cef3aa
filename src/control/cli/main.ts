import type { Command } from 'commander';
import { registerCommands, type LazyCommand } from '../../cli/lazy-commands.js';
import { controlCommandWord } from './command-word.js';
import { newControlProgram, overrideCommandExits, runControlProgram } from './program-base.js';

// Each command's module, imported only when it is run (src/cli/lazy-commands.ts): `steward-control
// rollout status` then loads neither serve's HTTP server and dashboard nor backup's copier. A
// command's module registers its subcommands and imports what they run only when one runs, so
// that --help, which registers every command, loads none of it. The order is the order of
// `steward-control --help`.
const COMMANDS: LazyCommand[] = [
  [['init'], async () => (await import('./commands/init.js')).registerInit],
  [['migrate'], async () => (await import('./commands/init.js')).registerMigrate],
  [['serve'], async () => (await import('./commands/serve.js')).registerServe],
  [['backup'], async () => (await import('./commands/backup.js')).registerBackup],
  [['restore'], async () => (await import('./commands/backup.js')).registerRestore],
  [['copy'], async () => (await import('./commands/backup.js')).registerCopy],
  [['token'], async () => (await import('./commands/token.js')).registerToken],
  [['keys'], async () => (await import('./commands/keys.js')).registerKeys],
  [['trust'], async () => (await import('./commands/trust.js')).registerTrust],
  [['release'], async () => (await import('./commands/release.js')).registerRelease],
  [['rollout'], async () => (await import('./commands/rollout.js')).registerRollout],
  [['target'], async () => (await import('./commands/target.js')).registerTarget],
  [['nodes'], async () => (await import('./commands/nodes.js')).registerNodes],
  [['receipts'], async () => (await import('./commands/receipts.js')).registerReceipts],
  [['operator'], async () => (await import('./commands/operator.js')).registerOperator],
  [['audit'], async () => (await import('./commands/audit.js')).registerAudit],
  [['hook'], async () => (await import('./commands/hook.js')).registerHook],
];

// The steward-control program (docs/design.md §9). With `argv`, only the command it names is
// registered when it names one; otherwise (help, an unknown or no command) every command is, so
// that help and commander's errors list them all.
export async function buildControlProgram(argv?: string[]): Promise<Command> {
  const program = newControlProgram();
  await registerCommands(program, COMMANDS, argv ? controlCommandWord(argv) : undefined);
  return overrideCommandExits(program);
}

// Runs steward-control with `argv` and returns its exit code: 0 ok, 1 failure, 2 usage, 3 refused.
// A leading -V/--version alone is answered by start.ts, before this module loads; a command that
// has a runner of its own (start.ts) is run by it instead.
export async function runControlCli(argv: string[]): Promise<number> {
  return runControlProgram(await buildControlProgram(argv), argv);
}
