// `nodes pin NODE APP=VERSION --reason R [--until DURATION]`, `nodes unpin NODE APP` (docs/design.md §18).
import * as z from '../../core/zod-mini.js';
import { StewardError } from '../../core/errors.js';
import { recordAudit } from '../audit/record-audit.js';
import { parseDuration } from '../cli/parse-options.js';
import type { PinRow } from '../store/store.js';
import { pinNode } from '../targets/pins.js';
import { checkNames } from './check-names.js';
import { flag, word } from './inputs.js';
import type { Operation } from './operation.js';

// APP=VERSION, checked as names.
function parsePinArg(arg: string): { app: string; version: string } {
  const eq = arg.indexOf('=');
  if (eq <= 0 || eq === arg.length - 1) throw new StewardError('USAGE', `nodes pin: ${JSON.stringify(arg)} is not APP=VERSION`);
  const app = arg.slice(0, eq);
  const version = arg.slice(eq + 1);
  checkNames(app, version);
  return { app, version };
}

export const nodesPin: Operation<{ nodeId: string; pin: string; reason?: string; until?: string }, { pin: PinRow }> = {
  command: 'nodes pin',
  action: 'nodes.pin',
  role: 'operator',
  input: z.strictObject({ nodeId: word, pin: word, reason: flag, until: flag }),
  async run(ctx, i) {
    const { app, version } = parsePinArg(i.pin);
    if (i.reason === undefined) throw new StewardError('USAGE', 'nodes pin: --reason is required (it is shown with every node it holds back)');
    const forMs = i.until === undefined ? null : parseDuration(i.until, '--until');
    const pin = await ctx.store.write(async (tx) => {
      const p = await pinNode(tx, { nodeId: i.nodeId, app, version, reason: i.reason as string, forMs, by: ctx.actor.operator });
      await recordAudit(tx, ctx.actor, 'nodes.pin', p.nodeId, { app, version, reason: p.reason, until: p.until });
      // A pin changes what the node should run: the ticker carries it without waiting for its timer.
      await tx.wakeRollouts();
      return p;
    });
    return { pin };
  },
};

export const nodesUnpin: Operation<{ nodeId: string; app: string }, { unpinned: PinRow }> = {
  command: 'nodes unpin',
  action: 'nodes.unpin',
  role: 'operator',
  input: z.strictObject({ nodeId: word, app: word }),
  async run(ctx, i) {
    checkNames(i.app);
    const unpinned = await ctx.store.write(async (tx) => {
      const p = await tx.pins.remove(i.nodeId, i.app);
      if (!p) throw new StewardError('NOT_FOUND', `node ${i.nodeId} has no pin of ${i.app}`);
      await recordAudit(tx, ctx.actor, 'nodes.unpin', p.nodeId, { app: p.app, version: p.version });
      await tx.wakeRollouts();
      return p;
    });
    return { unpinned };
  },
};
