// `hook add|list|remove|test` (docs/design.md §19, "Telling people"): who is sent which run and target
// events. A hook's secret is never shown back: `add` prints one only when it made it (no
// --secret-file), once, as `operator add` prints a token.
import { randomBytes } from 'node:crypto';
import * as z from '../../core/zod-mini.js';
import { StewardError } from '../../core/errors.js';
import { readExtraCa } from '../../platform/extra-ca.js';
import { recordAudit } from '../audit/record-audit.js';
import { deliveryHeaders } from '../hooks/delivery-headers.js';
import { newCloudEvent, parseHookEvents, TEST_EVENT, type HookEvent } from '../hooks/hook-events.js';
import { checkHookUrl } from '../hooks/hook-url.js';
import { DEFAULT_POST_TIMEOUT_MS, postEvent } from '../hooks/post-event.js';
import type { HookRow } from '../store/store.js';
import { flag } from './inputs.js';
import type { Operation } from './operation.js';

export const HOOK_NAME_RE = /^[a-z][a-z0-9._-]{0,62}$/;
const hookName = z.string().check(z.regex(HOOK_NAME_RE, 'hook names are [a-z][a-z0-9._-]{0,62}'));
// A secret: what --secret-file holds, less a trailing newline; at least 16 characters.
export const MIN_SECRET_CHARS = 16;
const MAX_SECRET_CHARS = 4096;

export interface HookView {
  name: string;
  url: string;
  events: string[];
  createdAt: number;
  createdBy: string | null;
  // Its deliveries: queued (not yet acknowledged), delivered and given up (kept 7 days).
  pending: number;
  delivered: number;
  gaveUp: number;
  lastAttemptAt: number | null;
  lastError: string | null;
}

// A hook as shown: everything but its secret.
function viewOf(h: HookRow, s?: { pending: number; delivered: number; gaveUp: number; lastAttemptAt: number | null; lastError: string | null }): HookView {
  return { name: h.name, url: h.url, events: h.events, createdAt: h.createdAt, createdBy: h.createdBy, pending: s?.pending ?? 0, delivered: s?.delivered ?? 0, gaveUp: s?.gaveUp ?? 0, lastAttemptAt: s?.lastAttemptAt ?? null, lastError: s?.lastError ?? null };
}

type AddInput = { name: string; url: string; events: string; secret?: string | undefined };

export const hookAdd: Operation<AddInput, HookView & { secret?: string }> = {
  command: 'hook add',
  action: 'hook.add',
  // Why admin: a hook sends the fleet's run and target events to a URL of its choosing.
  role: 'admin',
  input: z.strictObject({ name: hookName, url: z.string().check(z.maxLength(4096)), events: z.string().check(z.maxLength(4096)), secret: z.optional(z.string().check(z.maxLength(MAX_SECRET_CHARS + 2))) }),
  async run(ctx, i) {
    const url = checkHookUrl(i.url).href;
    const events: HookEvent[] = parseHookEvents(i.events);
    const given = i.secret === undefined ? null : i.secret.replace(/\r?\n$/, '');
    if (given !== null && given.length < MIN_SECRET_CHARS) throw new StewardError('USAGE', `the secret is ${given.length} characters; a hook's secret is at least ${MIN_SECRET_CHARS} (make one with: openssl rand -hex 32 > FILE)`);
    if (given !== null && /[\u0000-\u001f\u007f]/.test(given)) throw new StewardError('USAGE', 'the secret holds a control character or a line break; a secret is one line of text');
    const secret = given ?? randomBytes(32).toString('hex');
    return ctx.store.write(async (tx) => {
      const row: HookRow = { name: i.name, url, events, secret, createdAt: await tx.now(), createdBy: ctx.actor.operator };
      await tx.hooks.insert(row);
      await recordAudit(tx, ctx.actor, 'hook.add', row.name, { url, events, secret: given === null ? 'generated' : 'given' });
      return { ...viewOf(row), ...(given === null ? { secret } : {}) };
    });
  },
};

export const hookList: Operation<Record<string, never>, { hooks: HookView[] }> = {
  command: 'hook list',
  action: null,
  // Why operator, not viewer: a receiver's URL may itself be a credential (a chat webhook's).
  role: 'operator',
  input: z.strictObject({}),
  async run(ctx) {
    return ctx.store.read(async (tx) => {
      const stats = new Map((await tx.hooks.stats()).map((s) => [s.hook, s]));
      return { hooks: (await tx.hooks.list()).map((h) => viewOf(h, stats.get(h.name))) };
    });
  },
};

export const hookRemove: Operation<{ name: string }, { removed: string; pendingDropped: number }> = {
  command: 'hook remove',
  action: 'hook.remove',
  role: 'admin',
  input: z.strictObject({ name: hookName }),
  async run(ctx, { name }) {
    return ctx.store.write(async (tx) => {
      const h = await tx.hooks.get(name);
      if (!h) throw new StewardError('NOT_FOUND', `no hook ${name} (\`steward-control hook list\`)`);
      const pendingDropped = (await tx.hooks.stats()).find((s) => s.hook === name)?.pending ?? 0;
      await tx.hooks.remove(name);
      // Why recorded: the events still queued for it are dropped with it, never told.
      await recordAudit(tx, ctx.actor, 'hook.remove', name, { url: h.url, pendingDropped });
      return { removed: name, pendingDropped };
    });
  },
};

export interface HookTestView {
  hook: string;
  url: string;
  eventId: string;
  delivered: true;
  status: number;
  ms: number;
  message: string;
}

export const hookTest: Operation<{ name: string; timeout?: string | undefined }, HookTestView> = {
  command: 'hook test',
  action: 'hook.test',
  role: 'operator',
  input: z.strictObject({ name: hookName, timeout: flag }),
  async run(ctx, { name, timeout }) {
    const timeoutMs = timeout === undefined ? DEFAULT_POST_TIMEOUT_MS : parseTimeout(timeout);
    const h = await ctx.store.read((tx) => tx.hooks.get(name));
    if (!h) throw new StewardError('NOT_FOUND', `no hook ${name} (\`steward-control hook list\`)`);
    const at = Date.now();
    const ce = newCloudEvent(TEST_EVENT, `hook/${h.name}`, at, { hook: h.name, message: `a test event from steward-control to hook ${h.name}; it changes nothing` });
    const body = JSON.stringify(ce);
    const ca = ctx.hookCaFile ? await readExtraCa(ctx.hookCaFile) : undefined;
    const out = await postEvent(h.url, body, deliveryHeaders(h, { eventId: ce.id, body }, at), { timeoutMs, ca });
    await ctx.store.write((tx) => recordAudit(tx, ctx.actor, 'hook.test', h.name, { eventId: ce.id, ok: out.ok, status: out.status, message: out.message }));
    if (!out.ok) throw new StewardError('HOOK_DELIVERY_FAILED', `hook ${h.name}: ${h.url} ${out.message} (event ${ce.id})`);
    return { hook: h.name, url: h.url, eventId: ce.id, delivered: true, status: out.status as number, ms: out.ms, message: out.message };
  },
};

function parseTimeout(t: string): number {
  if (!/^\d{1,3}$/.test(t) || Number(t) < 1 || Number(t) > 60) throw new StewardError('USAGE', `--timeout ${JSON.stringify(t)} is not a number of seconds from 1 to 60`);
  return Number(t) * 1000;
}
