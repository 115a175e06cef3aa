import type { Command } from 'commander';
import type { AcceptedAnswer, UpdateAnswer } from '../../protocol/answers.js';
import { appArg, attemptIdArg, versionArg } from '../arguments.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { createProgressBar } from '../progress-bar.js';
import { reportAnswer } from '../update-answer.js';

// `agentctl rollback <app> [--to VERSION]` and `agentctl recover <app> [--to VERSION]`.
export function registerRollback(program: Command): void {
  for (const op of ['rollback', 'recover'] as const) {
    program
      .command(`${op} <app>`)
      .description(
        op === 'rollback'
          ? 'activate the previous version (or --to VERSION over admin.sock); puts a hold on the app'
          : 'run a normal activation of what current points at (or --to VERSION) and clear `blocked` (admin.sock)',
      )
      .option('--to <version>', op === 'rollback' ? 'a staged version other than previous (admin.sock only)' : 'the staged version to activate')
      .option('--attempt-id <id>', 'name the attempt')
      .action(async (app: string, o: { to?: string; attemptId?: string }, cmd: Command) => {
        const fields = {
          app: appArg(app),
          ...(o.to !== undefined ? { to: versionArg(o.to, '--to') } : {}),
          ...(o.attemptId !== undefined ? { attemptId: attemptIdArg(o.attemptId) } : {}),
        };
        const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
        const bar = createProgressBar(!ctx.json);
        let answer: UpdateAnswer | AcceptedAnswer;
        try {
          answer = await ctx.helper[op](fields, { onProgress: bar.update });
        } finally {
          bar.done();
        }
        process.exitCode = reportAnswer(answer, ctx.json);
      });
  }
}
