import { CommanderError } from 'commander';
import { StewardError } from '../core/errors.js';
import { EXIT } from './error-message.js';

// The exit code of a CLI run (agentctl, steward-control) whose command threw `err`, reported by
// the program's own `report`. Commander's help and version exits are 0; its usage errors are 2,
// reported as USAGE under --json (for a human, commander has printed them already).
export function exitCodeOfThrown(err: unknown, json: boolean, report: (err: unknown, json: boolean) => number): number {
  if (err instanceof CommanderError) {
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0) return EXIT.ok;
    if (json) report(new StewardError('USAGE', err.message), true);
    return EXIT.usage;
  }
  return report(err, json);
}
