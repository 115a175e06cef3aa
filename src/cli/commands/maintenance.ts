import type { Command } from 'commander';
import { StewardError } from '../../core/errors.js';
import { appArg } from '../arguments.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { holdReasonProblem, parseHoldDuration } from '../../core/hold-limits.js';
import { describeHold } from '../hold-text.js';
import { printJson, printLines } from '../output.js';
import { EXIT } from '../error-message.js';

// `agentctl prune <app> [--keep N]`, `agentctl hold <app> --reason R [--until DURATION]` and
// `agentctl release-hold <app>`, and `agentctl verify [app]` (docs/design.md §20).
export function registerMaintenance(program: Command): void {
  program
    .command('prune <app>')
    .description('remove staged versions beyond keepReleases (never current or previous; admin.sock)')
    .option('--keep <n>', 'versions to keep, from 2 to 100 (default: keepReleases)')
    .action(async (app: string, o: { keep?: string }, cmd: Command) => {
      const keep = o.keep === undefined ? undefined : /^\d+$/.test(o.keep) ? Number(o.keep) : NaN;
      if (keep !== undefined && !(keep >= 2 && keep <= 100)) throw new StewardError('USAGE', `--keep ${o.keep}: give a whole number from 2 to 100`);
      const fields = { app: appArg(app), ...(keep !== undefined ? { keep } : {}) };
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await ctx.helper.prune(fields);
      if (ctx.json) return printJson(r);
      printLines([r.removed.length ? `removed ${app} ${r.removed.join(', ')}` : `nothing to prune for ${app}`]);
    });
  program
    .command('verify [app]')
    .description("hash every file object and staged tree again and name any that changed on disk; exit 1 if one did (admin.sock)")
    .action(async (app: string | undefined, _o: unknown, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await ctx.helper.verify(app === undefined ? {} : { app: appArg(app) });
      const bad = r.apps.some((a) => a.problems.length > 0);
      if (bad) process.exitCode = EXIT.failure;
      if (ctx.json) return printJson(r);
      const lines: string[] = [];
      for (const a of r.apps) {
        lines.push(`${a.app}: ${a.trees} ${a.trees === 1 ? 'tree' : 'trees'}, ${a.objects} ${a.objects === 1 ? 'object' : 'objects'} (${a.objectBytes} bytes), ${a.problems.length === 0 ? 'all as staged' : `${a.problems.length} changed`}`);
        for (const p of a.problems) lines.push(`  ${p.kind === 'tree' ? `tree ${a.app} ${p.name}` : `object ${p.name}`} ${p.why}`);
      }
      printLines(lines);
    });
  program
    .command('hold <app>')
    .description('hold the app: the control plane may not change it until the hold expires or release-hold (admin.sock)')
    .requiredOption('--reason <text>', 'why, in one line (at most 256 characters, shown in status and to the control plane)')
    .option('--until <duration>', 'lift the hold by itself after this long: 30m, 4h, 2d, 1d12h (1 minute to 365 days; default: until release-hold)')
    .action(async (app: string, o: { reason: string; until?: string }, cmd: Command) => {
      const problem = holdReasonProblem(o.reason);
      if (problem) throw new StewardError('USAGE', `--reason ${problem}`);
      const fields = { app: appArg(app), reason: o.reason, ...(o.until !== undefined ? { forMs: parseHoldDuration(o.until) } : {}) };
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await ctx.helper.hold(fields);
      if (ctx.json) return printJson(r);
      printLines([`${app} ${describeHold(r.hold)}`, ...(r.replaced ? [`(it replaces the hold by ${r.replaced.by}: ${r.replaced.reason})`] : [])]);
    });
  program
    .command('release-hold <app>')
    .description("clear an operator's hold so the control plane may change the app again (admin.sock)")
    .action(async (app: string, _o, cmd: Command) => {
      const fields = { app: appArg(app) };
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await ctx.helper.releaseHold(fields);
      if (ctx.json) return printJson(r);
      process.stdout.write(r.released ? `hold on ${app} released\n` : `${app} was not held\n`);
    });
}
