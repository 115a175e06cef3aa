import type { Command } from 'commander';
import type { TrustStatus } from '../../protocol/answers.js';
import { appArg } from '../arguments.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { printJson, printLines, table, when } from '../output.js';
import { checkStatus } from '../status-check.js';
import { describeHold } from '../hold-text.js';

// `agentctl status [app]`
export function registerStatus(program: Command): void {
  program
    .command('status [app]')
    .description('current, previous, hold, blocked and running work per app')
    .option('--check', 'for monitoring: exit 1 when an app is in error, blocked or broken, else 3 when one is held, else 0')
    .action(async (app: string | undefined, o: { check?: boolean }, cmd: Command) => {
      const fields = app !== undefined ? { app: appArg(app) } : {};
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const result = await ctx.helper.status(fields);
      if (o.check) {
        const verdict = checkStatus(result);
        process.exitCode = verdict.exit;
        if (!ctx.json) printLines(verdict.problems.map((p) => `agentctl: check: ${p}`), process.stderr);
      }
      if (ctx.json) return printJson(result);
      const rows = [['APP', 'RUNNER', 'CURRENT', 'PREVIOUS', 'HIGHEST', 'LAST ATTEMPT', 'NOTES']];
      for (const a of result.apps) {
        const notes: string[] = [];
        if (a.currentState === 'invalid') notes.push('current INVALID');
        if (a.hold) notes.push(describeHold(a.hold));
        if (a.blocked) notes.push(`BLOCKED ${a.blocked.reason} since ${when(a.blocked.since)}`);
        if (a.quarantined.length) notes.push(`quarantined ${a.quarantined.join(',')}`);
        if (a.running) notes.push(`${a.running.op} ${a.running.attemptId} (${a.running.phase})`);
        if (a.stateError) notes.push(`state error: ${a.stateError}`);
        if (a.journalError) notes.push(`journal error: ${a.journalError}`);
        if (a.self) {
          notes.push(`runs ${a.self.version}${a.self.decision ? ` (${a.self.decision})` : ''}`);
          if (a.self.fallback) notes.push(`FALLBACK: ${a.self.fallback.message}`);
          if (a.self.packageReverted) notes.push(`REVERTED: ${a.self.packageReverted.message}`);
        }
        const sv = a.supervisor;
        if (a.unit) {
          const u = a.unit;
          notes.push('error' in u ? `unit ${u.name}: ${u.error}` : `unit ${u.name} ${u.activeState}/${u.subState} pid ${u.mainPid || '-'} restarts ${u.nRestarts}`);
        } else if (sv) {
          const exit = sv.lastExit ? ` last exit ${sv.lastExit.reason ? `${sv.lastExit.reason} (${sv.lastExit.signal ?? 'code ' + sv.lastExit.code})` : (sv.lastExit.signal ?? 'code ' + sv.lastExit.code)}` : '';
          if (sv.state === 'running') notes.push(`running pid ${sv.pid ?? '?'}${sv.attempts ? ` (${sv.attempts} respawns)` : ''}`);
          else if (sv.state === 'waiting') notes.push(`CRASHED, respawn ${sv.attempts + 1} at ${when(sv.nextAttemptAt)}${exit}`);
          else if (sv.state === 'error') notes.push(`ERROR: ${sv.giveUpReason ?? 'gave up'} (agentctl restart ${a.name})`);
          else notes.push('stopped');
        }
        if (a.watch) {
          notes.push(a.watch.closing ? `ROLLING BACK ${a.watch.version}: ${a.watch.closing}` : `watching ${a.watch.version} until ${when(a.watch.until)} (${a.watch.restarts} of ${a.watch.maxRestarts} exits allowed)`);
        }
        const l = a.lastAttempt;
        const last = l ? `${l.outcome}${l.reason ? ' ' + l.reason.code : ''} ${l.fromVersion ?? '-'}->${l.targetVersion} (${l.attemptId})` : '-';
        rows.push([a.name, a.runner, a.current ?? '-', a.previous ?? '-', a.highestActive ?? '-', last, notes.join('; ')]);
      }
      printLines([`helper pid ${result.pid}, root ${result.root}${result.recovering ? ', RECOVERING' : ''}`, ...(result.trust ? [trustLine(result.trust, Date.now())] : [])]);
      process.stdout.write(result.apps.length ? table(rows) : 'no apps in the host config\n');
    });
}

// How the host trusts releases (docs/design.md §21), one line.
export function trustLine(t: TrustStatus, now: number): string {
  if (t.error) return `trust: tuf, UNUSABLE: ${t.error}`;
  if (t.scheme === 'keys') return 'trust: keys (per-app release keys in /etc/steward/trusted-keys; no TUF root)';
  const ts = t.timestampVersion === undefined
    ? 'no timestamp yet'
    : `timestamp v${t.timestampVersion}${t.timestampSignedAt !== undefined ? ` signed ${Math.max(0, Math.round((now - t.timestampSignedAt) / 1000))} s ago` : ''}${t.timestampExpired ? ', EXPIRED' : ''}`;
  return `trust: tuf, root v${t.rootVersion ?? '?'}, ${ts}`;
}
