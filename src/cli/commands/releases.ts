import type { Command } from 'commander';
import { appArg } from '../arguments.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { describeFailures } from '../../core/quarantine.js';
import { printJson, printLines, table, when } from '../output.js';

// `agentctl releases <app>`
export function registerReleases(program: Command): void {
  program
    .command('releases <app>')
    .description('staged versions with their markers, current/previous and quarantine')
    .action(async (app: string, _o, cmd: Command) => {
      const fields = { app: appArg(app) };
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await ctx.helper.releases(fields);
      if (ctx.json) return printJson(r);
      const rows = [['VERSION', 'STATE', 'SIGNED', 'STAGED', 'NOTES']];
      for (const rel of r.releases) {
        const notes: string[] = [];
        if (rel.current) notes.push('current');
        if (rel.previous) notes.push('previous');
        const q = rel.quarantine;
        if (q?.inForce) notes.push(`quarantined until ${when(q.retryAfter)}: it ${describeFailures(q.failures)}`);
        else if (q) notes.push(`not quarantined now; it ${describeFailures(q.failures)}`);
        rows.push([rel.version, rel.valid ? 'valid' : 'NO MARKER', rel.signed === null ? '-' : rel.signed ? `key ${rel.keyId}` : 'unsigned', when(rel.stagedAt), notes.join(', ')]);
      }
      process.stdout.write(r.releases.length ? table(rows) : `no releases of ${app} are staged\n`);
      if (r.staging.length) printLines([`staging now: ${r.staging.join(', ')}`]);
    });
}
