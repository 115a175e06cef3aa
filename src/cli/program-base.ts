import { Command } from 'commander';
import { readOwnVersion } from '../platform/own-version.js';
import { EXIT } from './error-message.js';
import { exitCodeOfThrown } from './exit-code.js';
import type { Register } from './lazy-commands.js';
import { reportError } from './output.js';

// The agentctl program (docs/design.md §8) with its global options and no command yet.
export function newProgram(): Command {
  return new Command('agentctl')
    .description('drive steward-helper: stage, update, roll back and inspect releases on this host')
    .option('--root <dir>', 'root prefix of the host layout (tests, demos); default: STEWARD_ROOT unless root, else /')
    .option('--socket <path>', 'the helper socket to use (default: admin.sock if writable, else helper.sock)')
    .option('--json', 'print one JSON document on stdout')
    .version(readOwnVersion(), '-V, --version', 'print the steward version')
    .exitOverride()
    .showHelpAfterError();
}

// Runs `program` with `argv` and returns its exit code.
export async function runProgram(program: Command, argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    // A command may set process.exitCode (a rolled-back update exits 4) while printing its answer.
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    return exitCodeOfThrown(err, json, reportError);
  }
}

// Runs agentctl with `argv`, which names a command that `register` defines: the program as
// buildProgram (program.ts) makes it for that command word, its command's module imported here
// rather than when needed (each src/cli/run/ module is bundled as a file of its own: main.ts).
export function runCommand(argv: string[], register: Register): Promise<number> {
  const program = newProgram();
  register(program);
  return runProgram(program, argv);
}
