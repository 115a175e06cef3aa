import type { Command } from 'commander';
import type { AcceptedAnswer, UpdateAnswer } from '../../protocol/answers.js';
import { appArg, versionArg } from '../arguments.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { watchInterruptedUpdate } from '../interrupted-update.js';
import { createProgressBar } from '../progress-bar.js';
import { addReleaseSourceOptions, buildReleaseRequest, type ReleaseSourceOptions } from '../release-source.js';
import { reportAnswer } from '../update-answer.js';

// `agentctl update <app> <version> ...`: stage and activate, with rollback on failure.
export function registerUpdate(program: Command): void {
  addReleaseSourceOptions(program.command('update <app> <version>').description('stage and activate a release; roll back on its own if it fails'))
    .option('--no-wait', 'exit once the attempt is accepted (journal written) and print its attemptId')
    .action(async (app: string, version: string, o: ReleaseSourceOptions & { wait: boolean }, cmd: Command) => {
      const named = { app: appArg(app), version: versionArg(version) };
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const { fields, upload } = await buildReleaseRequest(o, ctx.socket.kind);
      const bar = createProgressBar(!ctx.json);
      // Ctrl-C from here on: the helper goes on with the update; agentctl says so, and how to follow it.
      const watch = watchInterruptedUpdate(ctx, cmd.optsWithGlobals<GlobalOptions>(), { ...named, upload });
      let answer: UpdateAnswer | AcceptedAnswer;
      try {
        answer = await ctx.helper.update(
          { ...named, ...fields, ...(o.wait === false ? { noWait: true } : {}) },
          {
            ...(upload ? { upload } : {}),
            onProgress: (p) => {
              watch.progress(p);
              bar.update(p);
            },
          },
        );
      } finally {
        watch.stop();
        bar.done();
      }
      process.exitCode = reportAnswer(answer, ctx.json);
    });
}
