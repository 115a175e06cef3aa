import { Command } from 'commander';
import { EXIT } from '../../cli/error-message.js';
import { exitCodeOfThrown } from '../../cli/exit-code.js';
import type { Register } from '../../cli/lazy-commands.js';
import { reportControlError } from './report.js';

// The steward-control program (docs/design.md §9) with its program options and no command yet.
export function newControlProgram(): Command {
  return (
    new Command('steward-control')
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
      .showHelpAfterError()
  );
}

// Makes the commands registered on `program` exit through runControlProgram too, not process.exit.
export function overrideCommandExits(program: Command): Command {
  for (const c of program.commands) {
    c.exitOverride();
    for (const s of c.commands) s.exitOverride();
  }
  return program;
}

// Runs `program` with `argv` and returns its exit code: 0 ok, 1 failure, 2 usage, 3 refused.
export async function runControlProgram(program: Command, argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    return exitCodeOfThrown(err, json, reportControlError);
  }
}

// The runner of a command module (src/control/cli/run/): the commands it defines, by their word,
// and the program that runs one of them alone, as main.ts's would for that word.
export interface ControlRunner {
  commands: Record<string, Register>;
  // Runs steward-control with `argv`, whose command word is `word`, one of `commands`.
  runControlCli(argv: string[], word: string): Promise<number>;
}

export function controlRunner(commands: Record<string, Register>): ControlRunner {
  return {
    commands,
    runControlCli: (argv, word) => {
      const register = commands[word];
      if (!register) throw new Error(`steward-control: no runner for the command ${word}`);
      const program = newControlProgram();
      register(program);
      return runControlProgram(overrideCommandExits(program), argv);
    },
  };
}
