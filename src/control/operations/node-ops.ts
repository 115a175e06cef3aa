// `nodes`, `nodes label`, `nodes remove` (docs/design.md §11).
import * as z from '../../core/zod-mini.js';
import { StewardError } from '../../core/errors.js';
import type { HeartbeatApp } from '../../core/heartbeat-schema.js';
import { heartbeatFresh } from '../../core/heartbeat-freshness.js';
import { applyLabelChanges, parseLabelChange, type Labels } from '../../core/labels.js';
import { matchesSelector, parseSelector } from '../../core/selector.js';
import { recordAudit } from '../audit/record-audit.js';
import { readHeartbeatSeconds } from '../store/settings.js';
import { decodeCursor, encodeCursor, fillPage, pageLimit } from './paging.js';
import { flag, flags, word } from './inputs.js';
import type { Operation } from './operation.js';
import type { NodeTrust } from '../store/store.js';
import { isMetadataStale } from '../trust/freshness.js';

export interface NodeView {
  nodeId: string;
  hostname: string;
  labels: Labels;
  enrolledAt: number;
  lastHeartbeatAt: number | null;
  heartbeatAgeMs: number | null;
  // It heartbeated once, but not within the last 3 heartbeat intervals (core/heartbeat-freshness.ts:
  // the rule that skips it in a run starting now, and counts it stale in the metrics).
  stale: boolean;
  lastSeq: number;
  bootId: string | null;
  agentVersion: string | null;
  // The node's clock minus the control plane's at its last heartbeat (null before one).
  clockSkewMs: number | null;
  // Its heartbeats are refused for clock skew (422 CLOCK_SKEW) since its last accepted one: since
  // when, when last recorded (at most a minute behind the latest refused one), and the skew then.
  clockSkewRefused: { since: number; lastAt: number; clockSkewMs: number } | null;
  apps: HeartbeatApp[];
  receiptLost: number[];
  // How its host trusts releases, from its latest heartbeat (v8; null: an older agent), and whether
  // its TUF metadata is stale while the fleet has a repository (docs/design.md §21.2).
  trust: NodeTrust | null;
  metadataStale: boolean;
}

export const nodesList: Operation<{ select?: string; cursor?: string; limit?: string }, { nodes: NodeView[]; nextCursor: string | null }> = {
  command: 'nodes',
  action: null,
  role: 'viewer',
  paged: 'nodes',
  input: z.strictObject({ select: flag, cursor: flag, limit: flag }),
  async run(ctx, i) {
    const sel = parseSelector(i.select ?? '');
    const after = decodeCursor(i.cursor, z.string().check(z.maxLength(256)));
    const limit = pageLimit(i.limit);
    return ctx.store.read(async (tx) => {
      const now = await tx.now();
      const intervalMs = (await readHeartbeatSeconds(tx)) * 1000;
      const hasRepository = (await tx.trust.latest('timestamp')) !== null;
      const page = await fillPage((a: string | null, n) => tx.nodes.page(a, n), (n) => n.nodeId, after, limit, (n) => matchesSelector(sel, n.labels));
      const nodes: NodeView[] = [];
      for (const n of page.rows) {
        nodes.push({
          nodeId: n.nodeId,
          hostname: n.hostname,
          labels: n.labels,
          enrolledAt: n.enrolledAt,
          lastHeartbeatAt: n.lastHeartbeatAt,
          heartbeatAgeMs: n.lastHeartbeatAt === null ? null : now - n.lastHeartbeatAt,
          stale: n.lastHeartbeatAt !== null && !heartbeatFresh(n.lastHeartbeatAt, now, intervalMs),
          lastSeq: n.lastSeq,
          bootId: n.bootId,
          agentVersion: n.agentVersion,
          clockSkewMs: n.clockSkewMs ?? null,
          clockSkewRefused: n.clockSkewRefused,
          apps: n.apps,
          receiptLost: await tx.receipts.gaps(n.nodeId),
          trust: n.trust,
          metadataStale: isMetadataStale(n, hasRepository),
        });
      }
      return { nodes, nextCursor: page.next === null ? null : encodeCursor(page.next) };
    });
  },
};

// A label argument of `nodes label`: k=v or k-.
const isLabelArg = (a: string) => a.includes('=') || a.endsWith('-');

export const nodesLabel: Operation<{ args?: string[]; select?: string }, { nodes: Array<{ nodeId: string; labels: Labels }> }> = {
  command: 'nodes label',
  action: 'nodes.label',
  role: 'operator',
  input: z.strictObject({ args: flags, select: flag }),
  async run(ctx, i) {
    const args = i.args ?? [];
    const ids = args.filter((a) => !isLabelArg(a));
    const changes = args.filter(isLabelArg).map(parseLabelChange);
    if (changes.length === 0) throw new StewardError('USAGE', 'nodes label: no change given (k=v sets a label, k- removes it)');
    if ((ids.length === 0) === (i.select === undefined)) throw new StewardError('USAGE', 'nodes label: name the nodes, or pass --select, not both');
    const sel = i.select === undefined ? null : parseSelector(i.select);
    const nodes = await ctx.store.write(async (tx) => {
      const all = await tx.nodes.list();
      const byId = new Map(all.map((n) => [n.nodeId, n]));
      for (const id of ids) if (!byId.has(id)) throw new StewardError('NOT_FOUND', `node ${id} is not enrolled`);
      const targets = sel ? all.filter((n) => matchesSelector(sel, n.labels)) : ids.map((id) => byId.get(id)!);
      const out: Array<{ nodeId: string; labels: Labels }> = [];
      for (const n of targets) {
        const labels = applyLabelChanges(n.labels, changes, n.nodeId);
        await tx.nodes.setLabels(n.nodeId, labels);
        out.push({ nodeId: n.nodeId, labels });
      }
      const changed = out.map((n) => n.nodeId);
      if (out.length) await recordAudit(tx, ctx.actor, 'nodes.label', changed.length <= 10 ? changed.join(',') : `${changed.length} nodes`, { changes: args.filter(isLabelArg), nodeIds: changed, ...(i.select !== undefined ? { select: i.select } : {}) });
      return out;
    });
    return { nodes };
  },
};

export const nodesRemove: Operation<{ nodeId: string }, { removed: string }> = {
  command: 'nodes remove',
  action: 'nodes.remove',
  role: 'admin',
  input: z.strictObject({ nodeId: word }),
  async run(ctx, { nodeId }) {
    await ctx.store.write(async (tx) => {
      if (!(await tx.nodes.remove(nodeId))) throw new StewardError('NOT_FOUND', `node ${nodeId} is not enrolled`);
      await recordAudit(tx, ctx.actor, 'nodes.remove', nodeId);
    });
    return { removed: nodeId };
  },
};
