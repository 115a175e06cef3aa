// `operator add|list|remove|rotate` (docs/design.md §12): who may use the admin API and the dashboard.
// A token is printed once, by add and rotate; remove and rotate end the operator's sessions.
import * as z from '../../core/zod-mini.js';
import { StewardError } from '../../core/errors.js';
import { recordAudit } from '../audit/record-audit.js';
import { hashSecret, mintOperatorToken } from '../operators/operator-tokens.js';
import { operatorNameSchema, roleSchema } from '../operators/roles.js';
import { SESSION_IDLE_MS } from '../operators/sessions.js';
import type { OperatorRole } from '../store/store.js';
import { type Operation } from './operation.js';

const nameInput = z.strictObject({ name: operatorNameSchema });

export const operatorAdd: Operation<{ name: string; role: OperatorRole }, { name: string; role: OperatorRole; token: string; createdAt: number }> = {
  command: 'operator add',
  action: 'operator.add',
  role: 'admin',
  input: z.strictObject({ name: operatorNameSchema, role: roleSchema }),
  async run(ctx, { name, role }) {
    const token = mintOperatorToken();
    return ctx.store.write(async (tx) => {
      const createdAt = await tx.now();
      await tx.operators.insert({ name, role, tokenHash: hashSecret(token), createdAt, rotatedAt: null });
      await recordAudit(tx, ctx.actor, 'operator.add', name, { role });
      return { name, role, token, createdAt };
    });
  },
};

export interface OperatorView {
  name: string;
  role: OperatorRole;
  createdAt: number;
  rotatedAt: number | null;
  // Dashboard sessions that have not expired.
  sessions: number;
}

export const operatorList: Operation<Record<string, never>, { operators: OperatorView[] }> = {
  command: 'operator list',
  action: null,
  role: 'viewer',
  input: z.strictObject({}),
  async run(ctx) {
    const operators = await ctx.store.read(async (tx) => {
      const now = await tx.now();
      const out: OperatorView[] = [];
      for (const o of await tx.operators.list()) out.push({ name: o.name, role: o.role, createdAt: o.createdAt, rotatedAt: o.rotatedAt, sessions: await tx.sessions.countFor(o.name, now, SESSION_IDLE_MS) });
      return out;
    });
    return { operators };
  },
};

export const operatorRemove: Operation<{ name: string }, { removed: string; sessionsEnded: number }> = {
  command: 'operator remove',
  action: 'operator.remove',
  role: 'admin',
  input: nameInput,
  async run(ctx, { name }) {
    return ctx.store.write(async (tx) => {
      const o = await tx.operators.get(name);
      if (!o) throw new StewardError('NOT_FOUND', `no operator ${name} (\`steward-control operator list\`)`);
      const sessionsEnded = await tx.sessions.removeFor(name);
      await tx.operators.remove(name);
      await recordAudit(tx, ctx.actor, 'operator.remove', name, { role: o.role, sessionsEnded });
      return { removed: name, sessionsEnded };
    });
  },
};

export const operatorRotate: Operation<{ name: string }, { name: string; role: OperatorRole; token: string; rotatedAt: number; sessionsEnded: number }> = {
  command: 'operator rotate',
  action: 'operator.rotate',
  role: 'admin',
  input: nameInput,
  async run(ctx, { name }) {
    const token = mintOperatorToken();
    return ctx.store.write(async (tx) => {
      const o = await tx.operators.get(name);
      if (!o) throw new StewardError('NOT_FOUND', `no operator ${name} (\`steward-control operator list\`)`);
      const rotatedAt = await tx.now();
      await tx.operators.setToken(name, hashSecret(token), rotatedAt);
      // Why: a rotation answers a token that may have leaked; a session made with it goes too.
      const sessionsEnded = await tx.sessions.removeFor(name);
      await recordAudit(tx, ctx.actor, 'operator.rotate', name, { sessionsEnded });
      return { name, role: o.role, token, rotatedAt, sessionsEnded };
    });
  },
};
