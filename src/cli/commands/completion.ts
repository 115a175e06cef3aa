import type { Command } from 'commander';
import { StewardError } from '../../core/errors.js';
import { readOwnVersion } from '../../platform/own-version.js';
import { bashCompletion } from '../completion.js';
import { printJson } from '../output.js';

const SHELLS = ['bash'];

// `agentctl completion bash`: the completion script, made from every command's definition.
export function registerCompletion(program: Command): void {
  program
    .command('completion <shell>')
    .description('print the shell completion script (bash): source <(agentctl completion bash)')
    .action(async (shell: string, _o, cmd: Command) => {
      if (!SHELLS.includes(shell)) throw new StewardError('USAGE', `completion ${shell}: the shells supported are ${SHELLS.join(', ')}`);
      // Every command, not only this one (buildProgram registers only the one argv names).
      const { buildProgram } = await import('../program.js');
      const script = bashCompletion(await buildProgram(), readOwnVersion());
      if (cmd.optsWithGlobals<{ json?: boolean }>().json) return printJson({ shell, script });
      process.stdout.write(script);
    });
}
