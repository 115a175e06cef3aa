// `token create|list|revoke`: enrollment tokens (docs/design.md §11).
import * as z from '../../core/zod-mini.js';
import { StewardError } from '../../core/errors.js';
import { parseLabels, type Labels } from '../../core/labels.js';
import { recordAudit } from '../audit/record-audit.js';
import { parseDuration } from '../cli/parse-options.js';
import { createToken } from '../enroll/tokens.js';
import type { TokenRow } from '../store/store.js';
import { flag, flags, word } from './inputs.js';
import type { Operation } from './operation.js';

export type TokenState = 'used' | 'revoked' | 'expired' | 'valid';

// What `token list` shows of a token: its state at `now`.
function tokenState(t: TokenRow, now: number): TokenState {
  if (t.usedAt !== null) return 'used';
  if (t.revokedAt !== null) return 'revoked';
  return t.expiresAt <= now ? 'expired' : 'valid';
}

export const tokenCreate: Operation<{ ttl?: string; label?: string[] }, { token: string; id: string; expiresAt: number; labels: Labels }> = {
  command: 'token create',
  action: 'token.create',
  role: 'operator',
  input: z.strictObject({ ttl: flag, label: flags }),
  async run(ctx, i) {
    const ttlMs = parseDuration(i.ttl ?? '1h', '--ttl');
    const labels = parseLabels(i.label ?? [], '--label');
    if (Object.keys(labels).some((k) => k.startsWith('claimed.'))) throw new StewardError('USAGE', '--label: claimed.* keys are what a node proposes itself; a token carries plain keys');
    return ctx.store.write(async (tx) => {
      const t = await createToken(tx, ttlMs, labels);
      await recordAudit(tx, ctx.actor, 'token.create', t.id, { expiresAt: t.expiresAt, labels });
      return t;
    });
  },
};

export const tokenList: Operation<Record<string, never>, { tokens: Array<TokenRow & { state: TokenState }> }> = {
  command: 'token list',
  action: null,
  role: 'viewer',
  input: z.strictObject({}),
  async run(ctx) {
    const { tokens, now } = await ctx.store.read(async (tx) => ({ tokens: await tx.tokens.list(), now: await tx.now() }));
    return { tokens: tokens.map((t) => ({ ...t, state: tokenState(t, now) })) };
  },
};

export const tokenRevoke: Operation<{ id: string }, { revoked: string; revokedAt: number | null }> = {
  command: 'token revoke',
  action: 'token.revoke',
  role: 'operator',
  input: z.strictObject({ id: word }),
  async run(ctx, { id }) {
    return ctx.store.write(async (tx) => {
      const now = await tx.now();
      const t = await tx.tokens.revoke(id, now);
      if (!t) throw new StewardError('NOT_FOUND', `no token ${JSON.stringify(id)} (\`steward-control token list\`)`);
      if (t.usedAt !== null) throw new StewardError('TOKEN_INVALID', `token ${id} was already used by node ${t.usedBy}; remove the node instead (\`steward-control nodes remove ${t.usedBy}\`)`);
      if (t.revokedAt === now) await recordAudit(tx, ctx.actor, 'token.revoke', t.id);
      return { revoked: t.id, revokedAt: t.revokedAt };
    });
  },
};
