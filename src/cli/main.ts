import { Command, CommanderError } from 'commander';
import { StewardError } from '../core/errors.js';
import { registerReleases } from './commands/releases.js';
import { registerStage } from './commands/stage.js';
import { registerStatus } from './commands/status.js';
import { registerUpdate } from './commands/update.js';
import { registerRollback } from './commands/rollback.js';
import { registerMaintenance } from './commands/maintenance.js';
import { registerReceipts } from './commands/receipts.js';
import { registerRunState } from './commands/run-state.js';
import { registerEnroll } from './commands/enroll.js';
import { registerDoctor } from './commands/doctor.js';
import { registerInstall } from './commands/install.js';
import { EXIT } from './error-message.js';
import { reportError } from './output.js';

// The agentctl program (DESIGN §8).
export function buildProgram(): Command {
  const program = new Command('agentctl')
    .description('drive steward-helper: stage, update, roll back and inspect releases on this host')
    .option('--root <dir>', 'root prefix of the host layout (tests, demos); default: STEWARD_ROOT unless root, else /')
    .option('--socket <path>', 'the helper socket to use (default: admin.sock if writable, else helper.sock)')
    .option('--json', 'print one JSON document on stdout')
    .exitOverride()
    .showHelpAfterError();
  registerStatus(program);
  registerStage(program);
  registerReleases(program);
  registerUpdate(program);
  registerRollback(program);
  registerMaintenance(program);
  registerReceipts(program);
  registerRunState(program);
  registerEnroll(program);
  registerDoctor(program);
  registerInstall(program);
  return program;
}

// Runs agentctl with `argv` and returns its exit code.
export async function runCli(argv: string[]): Promise<number> {
  const program = buildProgram();
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    // A command may set process.exitCode (a rolled-back update exits 4) while printing its answer.
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0) return EXIT.ok;
      if (json) reportError(new StewardError('USAGE', err.message), true);
      return EXIT.usage;
    }
    return reportError(err, json);
  }
}
