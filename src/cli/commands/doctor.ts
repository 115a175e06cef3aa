import type { Command } from 'commander';
import { passed, type CheckResult } from '../../core/doctor/check-result.js';
import { hostPaths } from '../../core/paths.js';
import { runDoctor } from '../doctor/run-doctor.js';
import { clientRoot, type GlobalOptions } from '../context.js';
import { EXIT } from '../error-message.js';
import { printJson, shown } from '../output.js';

// One line per check: `ok|warn|fail  <name>  <detail>`, names padded to one column (a detail
// quoting another tool's multi-line words is folded onto its line).
export function formatChecks(results: readonly CheckResult[]): string {
  const width = Math.max(0, ...results.map((r) => r.name.length));
  return results.map((r) => `${r.status.padEnd(4)}  ${r.name.padEnd(width)}  ${shown(r.detail.replace(/\s*\n\s*/g, ' '))}\n`).join('');
}

// `agentctl doctor` (docs/design.md §8): units, sockets, permissions, keys, config, clock, disk.
export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('check this host: units, sockets, owners and modes, keys, config, clock, disk (exit 1 when a check fails)')
    .action(async (_o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const results = await runDoctor(hostPaths(clientRoot(g)), g.socket ? { socket: g.socket } : {});
      const ok = passed(results);
      if (g.json) printJson({ ok, checks: results });
      else process.stdout.write(formatChecks(results));
      if (!ok) process.exitCode = EXIT.failure;
    });
}
