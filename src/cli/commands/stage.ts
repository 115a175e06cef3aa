import type { Command } from 'commander';
import type { StageResult } from '../../protocol/answers.js';
import { appArg, versionArg } from '../arguments.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { printJson, printLines } from '../output.js';
import { transferOf } from '../../protocol/transfer.js';
import { describeTransfer } from '../update-answer.js';
import { createProgressBar } from '../progress-bar.js';
import { addReleaseSourceOptions, buildReleaseRequest, type ReleaseSourceOptions } from '../release-source.js';

// `agentctl stage <app> <version> ...`: fetch, verify and stage now; activate later.
export function registerStage(program: Command): void {
  addReleaseSourceOptions(
    program.command('stage <app> <version>').description('fetch, verify and stage a release now; activate it later'),
  ).action(async (app: string, version: string, o: ReleaseSourceOptions, cmd: Command) => {
    const named = { app: appArg(app), version: versionArg(version) };
    const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
    const { fields, upload } = await buildReleaseRequest(o, ctx.socket.kind);
    const bar = createProgressBar(!ctx.json);
    let result: StageResult;
    try {
      result = await ctx.helper.stage(
        { ...named, ...fields },
        { ...(upload ? { upload } : {}), onProgress: bar.update },
      );
    } finally {
      bar.done();
    }
    if (ctx.json) return printJson(result);
    const how = result.signed ? `signed by key ${result.keyId}` : 'UNSIGNED';
    const what = result.reused ? 'already staged' : `staged (${result.entries ?? '?'} entries)`;
    printLines([`${app} ${version} ${what} at ${result.path}, ${how}`, ...(result.reused ? [] : [`  ${describeTransfer(transferOf(result))}`]), ...(result.patch && !result.patch.used ? [`  the static patch from ${result.patch.from} was not used: ${result.patch.code ? `${result.patch.code}: ` : ''}${result.patch.message}`] : []), ...(result.fallback ? [`  the file index was not used: ${result.fallback.code ? `${result.fallback.code}: ` : ''}${result.fallback.message}`] : [])]);
  });
}
