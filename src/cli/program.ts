import type { Command } from 'commander';
import { commandWord } from './command-word.js';
import { registerCommands, type LazyCommand } from './lazy-commands.js';
import { newProgram, runProgram } from './program-base.js';

export { commandWord };

// Each command's module, imported only when needed: `agentctl status` then loads what status
// needs and not the installer's, doctor's or enroll's modules (execa, proper-lockfile, the
// control-plane client...), which were most of its start-up (see bench/status-cli).
// The order is the order of `agentctl --help`. Most commands run by name do not come here: the
// entry runs their module's runner instead (main.ts, RUNNERS); this is the program of help, of a
// word that names no command, of --version, of the completion script, and of doctor and install.
const COMMANDS: LazyCommand[] = [
  [['status'], async () => (await import('./commands/status.js')).registerStatus],
  [['stage'], async () => (await import('./commands/stage.js')).registerStage],
  [['releases'], async () => (await import('./commands/releases.js')).registerReleases],
  [['update'], async () => (await import('./commands/update.js')).registerUpdate],
  [['rollback', 'recover'], async () => (await import('./commands/rollback.js')).registerRollback],
  [['prune', 'hold', 'release-hold', 'verify'], async () => (await import('./commands/maintenance.js')).registerMaintenance],
  [['receipts'], async () => (await import('./commands/receipts.js')).registerReceipts],
  [['start', 'stop', 'restart'], async () => (await import('./commands/run-state.js')).registerRunState],
  [['logs'], async () => (await import('./commands/logs.js')).registerLogs],
  [['enroll', 'trust'], async () => (await import('./commands/enroll.js')).registerEnrollAndTrust],
  [['doctor'], async () => (await import('./commands/doctor.js')).registerDoctor],
  [['install', 'uninstall'], async () => (await import('./commands/install.js')).registerInstall],
  [['completion'], async () => (await import('./commands/completion.js')).registerCompletion],
];

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
  const program = newProgram();
  const word = argv ? commandWord(argv) : undefined;
  if (argv && word === undefined && versionOnly(argv)) return program;
  await registerCommands(program, COMMANDS, word);
  return program;
}

// Runs agentctl with `argv` and returns its exit code.
export async function runCli(argv: string[]): Promise<number> {
  return runProgram(await buildProgram(argv), argv);
}
