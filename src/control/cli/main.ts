import { Command } from 'commander';
import { EXIT } from '../../cli/error-message.js';
import { exitCodeOfThrown } from '../../cli/exit-code.js';
import { commandWord, registerCommands, type LazyCommand } from '../../cli/lazy-commands.js';
import { reportControlError } from './report.js';

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
  [['release'], async () => (await import('./commands/release.js')).registerRelease],
  [['rollout'], async () => (await import('./commands/rollout.js')).registerRollout],
  [['nodes'], async () => (await import('./commands/nodes.js')).registerNodes],
  [['receipts'], async () => (await import('./commands/receipts.js')).registerReceipts],
  [['operator'], async () => (await import('./commands/operator.js')).registerOperator],
  [['audit'], async () => (await import('./commands/audit.js')).registerAudit],
];

// The program options that take their value in the next word.
const VALUE_OPTIONS = new Set(['--db', '--artifacts', '--server', '--ca-file']);

// The steward-control program (docs/design.md §9). With `argv`, only the command it names is
// registered when it names one; otherwise (help, an unknown or no command) every command is, so
// that help and commander's errors list them all.
export async function buildControlProgram(argv?: string[]): Promise<Command> {
  const program = new Command('steward-control')
    .description('the reference steward control plane: enrollment, heartbeats, signed releases, fleet rollouts')
    .option('--db <file|url>', 'the database: a SQLite file on the server host, or a postgres:// URL (default: STEWARD_CONTROL_DB)')
    .option('--artifacts <dir>', 'the folder of kept release tarballs (default: STEWARD_CONTROL_ARTIFACTS, else <db>.artifacts beside a SQLite file; required with PostgreSQL)')
    .option('--server <url>', 'a steward-control admin listener to run the command through, with the operator token in STEWARD_CONTROL_TOKEN (default: STEWARD_CONTROL_URL); every command but serve, init, migrate, backup, restore and copy')
    .option('--ca-file <file>', "a PEM CA bundle to trust for --server's https, beside Node's own")
    .option('--json', 'print one JSON document on stdout')
    // Not commander's .version(): a program option is also taken after a subcommand, and would
    // eat `release pack-agent --version <v>`. start.ts answers a leading -V/--version.
    .addHelpText('after', '\n  -V, --version  print the steward version (as the only argument)')
    .exitOverride()
    .showHelpAfterError();
  await registerCommands(program, COMMANDS, argv ? commandWord(argv, VALUE_OPTIONS) : undefined);
  // Subcommands exit through runControlCli too, not process.exit.
  for (const c of program.commands) {
    c.exitOverride();
    for (const s of c.commands) s.exitOverride();
  }
  return program;
}

// Runs steward-control with `argv` and returns its exit code: 0 ok, 1 failure, 2 usage, 3 refused.
// A leading -V/--version alone is answered by start.ts, before this module loads.
export async function runControlCli(argv: string[]): Promise<number> {
  const program = await buildControlProgram(argv);
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    return exitCodeOfThrown(err, json, reportControlError);
  }
}
