import type { Command } from 'commander';
import { callHelper } from '../../protocol/client.js';
import type { AcceptedAnswer, UpdateAnswer } from '../../protocol/schemas.js';
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
        const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
        const bar = createProgressBar(!ctx.json);
        let answer: UpdateAnswer | AcceptedAnswer;
        try {
          answer = (await callHelper(
            ctx.socket.path,
            { v: 1, id: 1, op, app, ...(o.to ? { to: o.to } : {}), ...(o.attemptId ? { attemptId: o.attemptId } : {}) },
            { onProgress: (ev) => bar.update(ev.phase, ev.bytes, ev.total) },
          )) as UpdateAnswer | AcceptedAnswer;
        } finally {
          bar.done();
        }
        process.exitCode = reportAnswer(answer, ctx.json);
      });
  }
}
