import type { Command } from 'commander';
import { formatLabels } from '../../../core/labels.js';
import { printJson, table } from '../../../cli/output.js';
import { nodesLabel, nodesList, nodesRemove, type NodeView } from '../../operations/node-ops.js';
import { jsonOf } from '../context.js';
import { invoke, invokeAll } from '../invoke.js';

function age(ms: number | null): string {
  if (ms === null) return 'never';
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

// The human form of `nodes`: a row per app of each node.
function formatNodes(view: NodeView[]): string {
  const rows = [['NODE', 'HOSTNAME', 'LABELS', 'HEARTBEAT', 'APP', 'CURRENT', 'PREVIOUS', 'HELD', 'BLOCKED', 'SUPERVISOR', 'RECEIPT-LOST']];
  for (const n of view) {
    const lost = n.receiptLost.length ? n.receiptLost.join(',') : '-';
    const apps = n.apps.length ? n.apps : [null];
    for (const [i, a] of apps.entries()) {
      const first = i === 0;
      rows.push([
        first ? n.nodeId : '',
        first ? n.hostname : '',
        first ? formatLabels(n.labels) : '',
        first ? age(n.heartbeatAgeMs) : '',
        a?.name ?? '-',
        a?.current ?? '-',
        a?.previous ?? '-',
        a ? (a.held ? 'yes' : 'no') : '-',
        a ? (a.blocked ? 'yes' : 'no') : '-',
        a ? `${a.supervisor.state}${a.supervisor.attempts ? ` (${a.supervisor.attempts} restarts)` : ''}${a.self?.fallback ? `, FALLBACK: ${a.self.fallback.version} set aside` : ''}${a.self?.packageReverted ? `, REVERTED: the package's ${a.self.packageReverted.version} did not commit` : ''}` : '-',
        first ? lost : '',
      ]);
    }
  }
  return table(rows);
}

// `steward-control nodes [--select SEL]`, `nodes label <node>... k=v k2-`, `nodes remove <nodeId>`
export function registerNodes(program: Command): void {
  const nodes = program
    .command('nodes')
    .description('the enrolled nodes: labels, last heartbeat, apps, receipt-lost gaps')
    .option('--select <selector>', 'only the nodes whose labels match (env=prod,tier!=db,region in (eu,us),!legacy)')
    .action(async (o: { select?: string }, cmd: Command) => {
      const view = await invokeAll<unknown, NodeView>(cmd, nodesList, { select: o.select });
      if (jsonOf(cmd)) return printJson({ nodes: view });
      process.stdout.write(view.length ? formatNodes(view) : o.select ? 'no node matches\n' : 'no nodes enrolled\n');
    });
  nodes
    .command('label [args...]')
    .description('change the labels of nodes: `nodes label <nodeId>... k=v k2-` (or `nodes label --select SEL k=v` instead of nodeIds)')
    .action(async (args: string[], _o: unknown, cmd: Command) => {
      // --select is the `nodes` command's own option, read here too.
      const o = cmd.optsWithGlobals<{ select?: string }>();
      const r = await invoke(cmd, nodesLabel, { args, select: o.select });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(r.nodes.length ? r.nodes.map((n) => `${n.nodeId}: ${formatLabels(n.labels)}`).join('\n') + '\n' : 'no node matches\n');
    });
  nodes
    .command('remove <nodeId>')
    .description('remove a node from the fleet (its receipts stay; it must enroll again)')
    .action(async (nodeId: string, _o: unknown, cmd: Command) => {
      const r = await invoke(cmd, nodesRemove, { nodeId });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`removed ${r.removed}\n`);
    });
}
