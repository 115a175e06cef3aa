import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { applyLabelChanges, formatLabels, parseLabelChange } from '../../../core/labels.js';
import { matchesSelector, parseSelector } from '../../../core/selector.js';
import { printJson, table } from '../../../cli/output.js';
import { jsonOf, withStore } from '../context.js';

function age(ms: number | null): string {
  if (ms === null) return 'never';
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

// A label argument of `nodes label`: k=v or k-.
const isLabelArg = (a: string) => a.includes('=') || a.endsWith('-');

// `steward-control nodes [--select SEL]`, `nodes label <node>... k=v k2-`, `nodes remove <nodeId>`
export function registerNodes(program: Command): void {
  const nodes = program
    .command('nodes')
    .description('the enrolled nodes: labels, last heartbeat, apps, receipt-lost gaps')
    .option('--select <selector>', 'only the nodes whose labels match (env=prod,tier!=db,region in (eu,us),!legacy)')
    .action(async (o: { select?: string }, cmd: Command) => {
      const sel = parseSelector(o.select ?? '');
      const view = await withStore(cmd, (store) =>
        store.read(async (tx) => {
          const now = await tx.now();
          const out = [];
          for (const n of await tx.nodes.list()) {
            if (!matchesSelector(sel, n.labels)) continue;
            out.push({
              nodeId: n.nodeId,
              hostname: n.hostname,
              labels: n.labels,
              enrolledAt: n.enrolledAt,
              lastHeartbeatAt: n.lastHeartbeatAt,
              heartbeatAgeMs: n.lastHeartbeatAt === null ? null : now - n.lastHeartbeatAt,
              lastSeq: n.lastSeq,
              bootId: n.bootId,
              agentVersion: n.agentVersion,
              apps: n.apps,
              receiptLost: await tx.receipts.gaps(n.nodeId),
            });
          }
          return out;
        }),
      );
      if (jsonOf(cmd)) return printJson({ nodes: view });
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
            a ? `${a.supervisor.state}${a.supervisor.attempts ? ` (${a.supervisor.attempts} restarts)` : ''}` : '-',
            first ? lost : '',
          ]);
        }
      }
      process.stdout.write(view.length ? table(rows) : o.select ? 'no node matches\n' : 'no nodes enrolled\n');
    });
  nodes
    .command('label [args...]')
    .description('change the labels of nodes: `nodes label <nodeId>... k=v k2-` (or `nodes label --select SEL k=v` instead of nodeIds)')
    .action(async (args: string[], _o: unknown, cmd: Command) => {
      // --select is the `nodes` command's own option, read here too.
      const o = cmd.optsWithGlobals<{ select?: string }>();
      const ids = args.filter((a) => !isLabelArg(a));
      const changes = args.filter(isLabelArg).map(parseLabelChange);
      if (changes.length === 0) throw new StewardError('USAGE', 'nodes label: no change given (k=v sets a label, k- removes it)');
      if ((ids.length === 0) === (o.select === undefined)) throw new StewardError('USAGE', 'nodes label: name the nodes, or pass --select, not both');
      const sel = o.select === undefined ? null : parseSelector(o.select);
      const changed = await withStore(cmd, (store) =>
        store.write(async (tx) => {
          const all = await tx.nodes.list();
          const byId = new Map(all.map((n) => [n.nodeId, n]));
          for (const id of ids) if (!byId.has(id)) throw new StewardError('NOT_FOUND', `node ${id} is not enrolled`);
          const targets = sel ? all.filter((n) => matchesSelector(sel, n.labels)) : ids.map((id) => byId.get(id)!);
          const out: Array<{ nodeId: string; labels: Record<string, string> }> = [];
          for (const n of targets) {
            const labels = applyLabelChanges(n.labels, changes, n.nodeId);
            await tx.nodes.setLabels(n.nodeId, labels);
            out.push({ nodeId: n.nodeId, labels });
          }
          return out;
        }),
      );
      if (jsonOf(cmd)) return printJson({ nodes: changed });
      process.stdout.write(changed.length ? changed.map((n) => `${n.nodeId}: ${formatLabels(n.labels)}`).join('\n') + '\n' : 'no node matches\n');
    });
  nodes
    .command('remove <nodeId>')
    .description('remove a node from the fleet (its receipts stay; it must enroll again)')
    .action(async (nodeId: string, _o: unknown, cmd: Command) => {
      const removed = await withStore(cmd, (store) => store.write((tx) => tx.nodes.remove(nodeId)));
      if (!removed) throw new StewardError('NOT_FOUND', `node ${nodeId} is not enrolled`);
      if (jsonOf(cmd)) return printJson({ removed: nodeId });
      process.stdout.write(`removed ${nodeId}\n`);
    });
}
