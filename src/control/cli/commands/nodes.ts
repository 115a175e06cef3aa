import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { printJson, table } from '../../../cli/output.js';
import { jsonOf, withStore } from '../context.js';

function age(ms: number | null): string {
  if (ms === null) return 'never';
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

// `steward-control nodes` and `nodes remove <nodeId>`
export function registerNodes(program: Command): void {
  const nodes = program
    .command('nodes')
    .description('the enrolled nodes: last heartbeat, apps, receipt-lost gaps')
    .action(async (_o: unknown, cmd: Command) => {
      const view = await withStore(cmd, (store) =>
        store.read(async (tx) => {
          const now = await tx.now();
          const out = [];
          for (const n of await tx.nodes.list()) {
            out.push({
              nodeId: n.nodeId,
              hostname: n.hostname,
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
      const rows = [['NODE', 'HOSTNAME', 'HEARTBEAT', 'APP', 'CURRENT', 'PREVIOUS', 'HELD', 'BLOCKED', 'SUPERVISOR', 'RECEIPT-LOST']];
      for (const n of view) {
        const lost = n.receiptLost.length ? n.receiptLost.join(',') : '-';
        const apps = n.apps.length ? n.apps : [null];
        for (const [i, a] of apps.entries()) {
          const first = i === 0;
          rows.push([
            first ? n.nodeId : '',
            first ? n.hostname : '',
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
      process.stdout.write(view.length ? table(rows) : 'no nodes enrolled\n');
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
