import type { Command } from 'commander';
import type { HeartbeatApp } from '../../../core/heartbeat-schema.js';
import { formatLabels } from '../../../core/labels.js';
import { printJson, table, when } from '../../../cli/output.js';
import type { NodeView } from '../../operations/node-ops.js';
import { jsonOf } from '../context.js';
import { invoke, invokeAll } from '../invoke.js';

// The operations' code (zod, their schemas), imported when a subcommand runs: --help and the
// parsing of the command line register the commands without it.
const ops = () => import('../../operations/node-ops.js');
const pinOps = () => import('../../operations/pin-ops.js');

function age(ms: number | null): string {
  if (ms === null) return 'never';
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

// A clock skew, signed: +850ms, -4.2s, +10m05s, -2h03m.
export function formatSkew(ms: number): string {
  const sign = ms < 0 ? '-' : '+';
  const a = Math.abs(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  if (a < 1000) return `${sign}${a}ms`;
  if (a < 60_000) return `${sign}${(a / 1000).toFixed(1)}s`;
  const s = Math.floor(a / 1000);
  return s < 3600 ? `${sign}${Math.floor(s / 60)}m${pad(s % 60)}s` : `${sign}${Math.floor(s / 3600)}h${pad(Math.floor(s / 60) % 60)}m`;
}

// A node's clock skew: the one its refused heartbeats carry while they are refused, else its
// last accepted heartbeat's.
function skewCell(n: NodeView): string {
  const r = n.clockSkewRefused;
  if (r) return `${formatSkew(r.clockSkewMs)}, refused heartbeats since ${when(r.since)}`;
  return n.clockSkewMs === null ? '-' : formatSkew(n.clockSkewMs);
}

// Whether the host holds the app and, from agents that report it (heartbeat v6, docs/design.md §18),
// who holds it, why and until when.
export function heldCell(a: Pick<HeartbeatApp, 'held' | 'hold'>): string {
  if (!a.held) return 'no';
  if (!a.hold) return 'yes';
  return `yes: ${a.hold.by} since ${when(a.hold.at)} (${a.hold.reason}), ${a.hold.until === null ? 'until release-hold' : `until ${when(a.hold.until)}`}`;
}

// How the node's host trusts releases (docs/design.md §21.2), from its latest heartbeat: `keys`,
// `tuf r<root version>` (`tuf` before it reports one), ` stale` after it when metadata-stale, `-`
// for an agent older than heartbeat v8. Built from the report's scheme and version alone, each
// checked (a report is the host's word, and a remote server's answer is read as it comes): an
// unknown scheme is `?`, a version that is not a positive whole number is left out.
export function trustCell(n: Pick<NodeView, 'trust' | 'metadataStale'>): string {
  const t = n.trust as { scheme?: unknown; rootVersion?: unknown } | null | undefined;
  if (!t || typeof t !== 'object') return '-';
  const scheme = t.scheme === 'keys' || t.scheme === 'tuf' ? t.scheme : '?';
  const root = scheme === 'tuf' && Number.isSafeInteger(t.rootVersion) && (t.rootVersion as number) > 0 ? ` r${t.rootVersion as number}` : '';
  return `${scheme}${root}${n.metadataStale === true ? ' stale' : ''}`;
}

// The human form of `nodes`: a row per app of each node.
export function formatNodes(view: NodeView[]): string {
  const rows = [['NODE', 'HOSTNAME', 'LABELS', 'HEARTBEAT', 'CLOCK-SKEW', 'TRUST', 'APP', 'CURRENT', 'PREVIOUS', 'HELD', 'BLOCKED', 'SUPERVISOR', 'RECEIPT-LOST']];
  for (const n of view) {
    const lost = n.receiptLost.length ? n.receiptLost.join(',') : '-';
    const apps = n.apps.length ? n.apps : [null];
    for (const [i, a] of apps.entries()) {
      const first = i === 0;
      rows.push([
        first ? n.nodeId : '',
        first ? n.hostname : '',
        first ? formatLabels(n.labels) : '',
        first ? `${age(n.heartbeatAgeMs)}${n.stale ? ' (stale)' : ''}` : '',
        first ? skewCell(n) : '',
        first ? trustCell(n) : '',
        a?.name ?? '-',
        a?.current ?? '-',
        a?.previous ?? '-',
        a ? heldCell(a) : '-',
        a ? (a.blocked ? 'yes' : 'no') : '-',
        a ? `${a.supervisor.state}${a.supervisor.attempts ? ` (${a.supervisor.attempts} restarts)` : ''}${a.self?.fallback ? `, FALLBACK: ${a.self.fallback.version} set aside` : ''}${a.self?.packageReverted ? `, REVERTED: the package's ${a.self.packageReverted.version} did not commit` : ''}${a.watch ? `, watching ${a.watch.version} (${a.watch.restarts} of ${a.watch.maxRestarts} exits)` : ''}${a.restarts ? `, ${a.restarts} since activation` : ''}${a.lastExit?.reason ? `, last exit ${a.lastExit.reason}` : ''}` : '-',
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
    .description('the enrolled nodes: labels, last heartbeat, clock skew (and heartbeats refused for it), trust (scheme, root version, metadata-stale), apps, receipt-lost gaps')
    .option('--select <selector>', 'only the nodes whose labels match (env=prod,tier!=db,region in (eu,us),!legacy)')
    .action(async (o: { select?: string }, cmd: Command) => {
      const view = await invokeAll<unknown, NodeView>(cmd, (await ops()).nodesList, { select: o.select });
      if (jsonOf(cmd)) return printJson({ nodes: view });
      process.stdout.write(view.length ? formatNodes(view) : o.select ? 'no node matches\n' : 'no nodes enrolled\n');
    });
  nodes
    .command('label [args...]')
    .description('change the labels of nodes: `nodes label <nodeId>... k=v k2-` (or `nodes label --select SEL k=v` instead of nodeIds)')
    .action(async (args: string[], _o: unknown, cmd: Command) => {
      // --select is the `nodes` command's own option, read here too.
      const o = cmd.optsWithGlobals<{ select?: string }>();
      const r = await invoke(cmd, (await ops()).nodesLabel, { args, select: o.select });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(r.nodes.length ? r.nodes.map((n) => `${n.nodeId}: ${formatLabels(n.labels)}`).join('\n') + '\n' : 'no node matches\n');
    });
  nodes
    .command('pin <nodeId> <app=version>')
    .description('hold a node at a catalog version whatever a target wants (its host\'s own hold still comes first)')
    .requiredOption('--reason <text>', 'why: shown with the node wherever it is behind')
    .option('--until <duration>', 'lift the pin by itself after this long (30m, 12h, 7d); default: until `nodes unpin`')
    .action(async (nodeId: string, pin: string, o: { reason: string; until?: string }, cmd: Command) => {
      const r = await invoke(cmd, (await pinOps()).nodesPin, { nodeId, pin, reason: o.reason, until: o.until });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`pinned ${r.pin.nodeId} to ${r.pin.app} ${r.pin.version}${r.pin.until ? ` until ${when(r.pin.until)}` : ''}: ${r.pin.reason}\n`);
    });
  nodes
    .command('unpin <nodeId> <app>')
    .description("lift a node's pin of the app: targets converge it again")
    .action(async (nodeId: string, app: string, _o: unknown, cmd: Command) => {
      const r = await invoke(cmd, (await pinOps()).nodesUnpin, { nodeId, app });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`unpinned ${r.unpinned.nodeId} from ${r.unpinned.app} ${r.unpinned.version}\n`);
    });
  nodes
    .command('remove <nodeId>')
    .description('remove a node from the fleet (its receipts stay; it must enroll again)')
    .action(async (nodeId: string, _o: unknown, cmd: Command) => {
      const r = await invoke(cmd, (await ops()).nodesRemove, { nodeId });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`removed ${r.removed}\n`);
    });
}
