import { Command } from 'commander';
import { readOwnVersion } from '../platform/own-version.js';
import { EXIT } from './error-message.js';
import { exitCodeOfThrown } from './exit-code.js';
import { commandWord as commandWordOf, registerCommands, type LazyCommand } from './lazy-commands.js';
import { reportError } from './output.js';

// Each command's module, imported only when needed: `agentctl status` then loads what status
// needs and not the installer's, doctor's or enroll's modules (execa, proper-lockfile, the
// control-plane client...), which were most of its start-up (see bench/status-cli).
// The order is the order of `agentctl --help`.
const COMMANDS: LazyCommand[] = [
  [['status'], async () => (await import('./commands/status.js')).registerStatus],
  [['stage'], async () => (await import('./commands/stage.js')).registerStage],
  [['releases'], async () => (await import('./commands/releases.js')).registerReleases],
  [['update'], async () => (await import('./commands/update.js')).registerUpdate],
  [['rollback', 'recover'], async () => (await import('./commands/rollback.js')).registerRollback],
  [['prune', 'release-hold'], async () => (await import('./commands/maintenance.js')).registerMaintenance],
  [['receipts'], async () => (await import('./commands/receipts.js')).registerReceipts],
  [['start', 'stop', 'restart'], async () => (await import('./commands/run-state.js')).registerRunState],
  [['logs'], async () => (await import('./commands/logs.js')).registerLogs],
  [['enroll'], async () => (await import('./commands/enroll.js')).registerEnroll],
  [['doctor'], async () => (await import('./commands/doctor.js')).registerDoctor],
  [['install', 'uninstall'], async () => (await import('./commands/install.js')).registerInstall],
  [['completion'], async () => (await import('./commands/completion.js')).registerCompletion],
];

// The global options that take a value in the next word.
const VALUE_OPTIONS = new Set(['--root', '--socket']);

// The command word of `argv`: the first word that is neither a global option nor its value.
export function commandWord(argv: string[]): string | undefined {
  return commandWordOf(argv, VALUE_OPTIONS);
}

// Whether `argv`, which names no command, asks for the version and nothing else: -V or
// --version, and no help.
function versionOnly(argv: string[]): boolean {
  const words = new Set(argv);
  return (words.has('--version') || words.has('-V')) && !words.has('--help') && !words.has('-h');
}

// The agentctl program (docs/design.md §8). With `argv`, only the command it names is registered when
// it names one, and none when it asks for the version alone; otherwise (help, an unknown or no
// command) every command is, so that help and commander's errors list them all.
export async function buildProgram(argv?: string[]): Promise<Command> {
  const program = new Command('agentctl')
    .description('drive steward-helper: stage, update, roll back and inspect releases on this host')
    .option('--root <dir>', 'root prefix of the host layout (tests, demos); default: STEWARD_ROOT unless root, else /')
    .option('--socket <path>', 'the helper socket to use (default: admin.sock if writable, else helper.sock)')
    .option('--json', 'print one JSON document on stdout')
    .version(readOwnVersion(), '-V, --version', 'print the steward version')
    .exitOverride()
    .showHelpAfterError();
  const word = argv ? commandWord(argv) : undefined;
  if (argv && word === undefined && versionOnly(argv)) return program;
  await registerCommands(program, COMMANDS, word);
  return program;
}

// Runs agentctl with `argv` and returns its exit code.
export async function runCli(argv: string[]): Promise<number> {
  const program = await buildProgram(argv);
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    // A command may set process.exitCode (a rolled-back update exits 4) while printing its answer.
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    return exitCodeOfThrown(err, json, reportError);
  }
}
