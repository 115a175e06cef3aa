import type { Command } from 'commander';
import { describeWindows } from '../../../core/windows.js';
import { printJson, shown, table, when } from '../../../cli/output.js';
import type { TargetDryRunView, TargetSetView } from '../../operations/target-ops.js';
import type { TargetSummary, TargetView } from '../../targets/target-view.js';
import { jsonOf } from '../context.js';
import { invoke } from '../invoke.js';
import type { RunStatusView } from '../../rollouts/run-status.js';
import { addRunFlags, analysisLines, formatDryRun } from './rollout.js';

// The operations' code, imported when a subcommand runs (as rollout.ts does).
const ops = () => import('../../operations/target-ops.js');

const lines = (l: string[]) => l.map((x) => shown(x) + '\n').join('');

// The one line of a target in `target list` and at the head of `target status`.
function headOf(t: TargetSummary): string[] {
  const behind = Object.entries(t.behind)
    .filter(([, n]) => n > 0)
    .map(([r, n]) => `${r} ${n}`)
    .join(', ');
  return [
    `target ${t.name}: ${t.app} ${t.version} ${t.status}; priority ${t.priority}; selector ${t.selector || '(every node)'}`,
    `  set ${when(t.setAt)}${t.setBy ? ` by ${t.setBy}` : ''}; run ${t.run ? `${t.run.id} (${t.run.version}, ${t.run.status})` : '-'}; windows ${describeWindows(t.policy.windows, t.policy.tz)}`,
    `  selected ${t.counts.selected}, current ${t.counts.current}, behind ${t.counts.behind}${behind ? ` (${behind})` : ''}`,
    ...(t.halted ? [`  halted by rollout ${t.halted.runId}: ${t.halted.code ?? '-'}: ${t.halted.message}`] : []),
    ...(t.analysis && t.run ? analysisLines({ analysis: t.analysis, status: t.run.status as RunStatusView['status'] }) : [`  analysis ${t.policy.analysis?.mode ?? 'off'} (its next run's)`]),
  ];
}

// The human form of `target status`: the target, then each node with its one reason.
export function formatTarget(v: TargetView): string {
  const rows = [['NODE', 'HOST', 'VERSION', 'STATE', 'REASON', 'SINCE', 'DETAIL']];
  for (const n of v.nodes) {
    const r = n.reason;
    const detail = r ? `${r.message}${r.by ? ` (by ${r.by})` : ''}${r.until ? ` until ${when(r.until)}` : ''}${r.code ? ` [${r.code}]` : ''}` : '-';
    rows.push([n.nodeId, n.hostname || '-', n.version ?? '-', n.state, r?.reason ?? '-', r?.since ? when(r.since) : '-', detail]);
  }
  return lines(headOf(v)) + (v.nodes.length ? table(rows) : '  no node selected\n');
}

// `steward-control target set|list|status|pause|resume|remove`
export function registerTarget(program: Command): void {
  const target = program.command('target').description('standing wishes: every selected node converges to the version, through runs with the policy of `rollout start`');
  addRunFlags(target.command('set <name>').description('set a target: the nodes its selector picks that report the app converge to the version, now and whenever one matches later'))
    .requiredOption('--app <app>', 'the app')
    .requiredOption('--version <version>', 'the catalog version its nodes should run')
    .option('--priority <n>', 'where two targets of the app select a node, the higher priority wins (default 0); an equal overlap is refused (TARGET_CONFLICT)')
    .action(async (name: string, o: Record<string, unknown>, cmd: Command) => {
      const v = await invoke(cmd, (await ops()).targetSet, { name, ...o });
      if (jsonOf(cmd)) return printJson(v);
      if ((v as TargetDryRunView).dryRun) {
        const d = v as TargetDryRunView;
        process.stdout.write(`dry run of target ${d.target.name}, nothing was written\n` + formatTarget(d.target) + lines(d.notes.map((n) => `  note: ${n}`)) + (d.run ? formatDryRun(d.run) : '  no run would start now\n'));
        return;
      }
      const s = v as TargetSetView;
      process.stdout.write(formatTarget(s) + lines(s.notes.map((n) => `  note: ${n}`)));
    });
  target
    .command('list')
    .description('every target: its version, status, and how many nodes are behind and why')
    .action(async (_o: unknown, cmd: Command) => {
      const out = await invoke(cmd, (await ops()).targetList, {});
      if (jsonOf(cmd)) return printJson(out);
      process.stdout.write(out.targets.length ? out.targets.map((t) => lines(headOf(t))).join('') : 'no targets\n');
    });
  target
    .command('status <name>')
    .description('a target and each node it selects: its version, and its one reason for being behind')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const v = await invoke(cmd, (await ops()).targetStatus, { name });
      if (jsonOf(cmd)) return printJson(v);
      process.stdout.write(formatTarget(v));
    });
  for (const [name, what] of [
    ['pause', 'its run issues nothing new and no run starts'],
    ['resume', 'converge again after a pause, a halt or failed nodes (they are issued again)'],
  ] as const) {
    target
      .command(`${name} <name>`)
      .description(`${name} a target: ${what}`)
      .action(async (n: string, _o: unknown, cmd: Command) => {
        const o = await ops();
        const v = await invoke(cmd, name === 'pause' ? o.targetPause : o.targetResume, { name: n });
        if (jsonOf(cmd)) return printJson(v);
        process.stdout.write(formatTarget(v));
      });
  }
  target
    .command('revert <name>')
    .description("take the nodes the target's last run changed back to the version each ran before (the helper's rollback), in its batches, without canaries or bake; pauses the target")
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const v = await invoke(cmd, (await ops()).targetRevert, { name });
      if (jsonOf(cmd)) return printJson(v);
      const runs = v.reverts.map((r) => `${r.nodes.length} node(s) to ${v.app} ${r.to} in rollout ${r.runId}`).join(', ');
      const left = v.leftOut.length > 0 ? `; left out ${v.leftOut.length} node(s) with no version before (it installed ${v.app} first): ${v.leftOut.slice(0, 5).join(', ')}${v.leftOut.length > 5 ? ' ...' : ''}` : '';
      process.stdout.write(`reverting ${runs}${left}; target ${v.name} is paused (\`target resume ${v.name}\` converges to ${v.version} again)\n` + formatTarget(v));
    });
  target
    .command('remove <name>')
    .description('forget a target and stop its running run (attempts already sent keep their verdicts)')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const r = await invoke(cmd, (await ops()).targetRemove, { name });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`removed target ${r.removed}${r.stoppedRun !== null ? `; stopped rollout ${r.stoppedRun}` : ''}\n`);
    });
}
