import { Command } from 'commander';
import { EXIT } from '../../cli/error-message.js';
import { exitCodeOfThrown } from '../../cli/exit-code.js';
import { readOwnVersion } from '../../platform/own-version.js';
import { registerAudit } from './commands/audit.js';
import { registerBackup, registerCopy, registerRestore } from './commands/backup.js';
import { registerInit, registerMigrate } from './commands/init.js';
import { registerKeys } from './commands/keys.js';
import { registerNodes } from './commands/nodes.js';
import { registerOperator } from './commands/operator.js';
import { registerReceipts } from './commands/receipts.js';
import { registerRelease } from './commands/release.js';
import { registerRollout } from './commands/rollout.js';
import { registerServe } from './commands/serve.js';
import { registerToken } from './commands/token.js';
import { reportControlError } from './report.js';

// The steward-control program (DESIGN §9).
export function buildControlProgram(): Command {
  const program = new Command('steward-control')
    .description('the reference steward control plane: enrollment, heartbeats, signed releases, fleet rollouts')
    .option('--db <file|url>', 'the database: a SQLite file on the server host, or a postgres:// URL (default: STEWARD_CONTROL_DB)')
    .option('--artifacts <dir>', 'the folder of kept release tarballs (default: STEWARD_CONTROL_ARTIFACTS, else <db>.artifacts beside a SQLite file; required with PostgreSQL)')
    .option('--server <url>', 'a steward-control admin listener to run the command through, with the operator token in STEWARD_CONTROL_TOKEN (default: STEWARD_CONTROL_URL); every command but serve, init, migrate, backup, restore and copy')
    .option('--ca-file <file>', "a PEM CA bundle to trust for --server's https, beside Node's own")
    .option('--json', 'print one JSON document on stdout')
    // Not commander's .version(): a program option is also taken after a subcommand, and would
    // eat `release pack-agent --version <v>`. runControlCli answers a leading -V/--version.
    .addHelpText('after', '\n  -V, --version  print the steward version (as the only argument)')
    .exitOverride()
    .showHelpAfterError();
  registerInit(program);
  registerMigrate(program);
  registerServe(program);
  registerBackup(program);
  registerRestore(program);
  registerCopy(program);
  registerToken(program);
  registerKeys(program);
  registerRelease(program);
  registerRollout(program);
  registerNodes(program);
  registerReceipts(program);
  registerOperator(program);
  registerAudit(program);
  // Subcommands exit through runControlCli too, not process.exit.
  for (const c of program.commands) {
    c.exitOverride();
    for (const s of c.commands) s.exitOverride();
  }
  return program;
}

// Runs steward-control with `argv` and returns its exit code: 0 ok, 1 failure, 2 usage, 3 refused.
export async function runControlCli(argv: string[]): Promise<number> {
  const program = buildControlProgram();
  const json = argv.includes('--json');
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) {
    process.stdout.write(`${readOwnVersion()}\n`);
    return EXIT.ok;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    return exitCodeOfThrown(err, json, reportControlError);
  }
}
