import type { DeliveryRow, HookReads, HookRow, HookStats, HookWrites } from '../store.js';
import { hookExists, readHookEvents } from '../hook-rows.js';
import { isUniqueViolation, type Query } from './query.js';

const DELIVERY = 'id, hook, "eventId", type, body, "createdAt", state, attempts, "nextAt", "leaseOwner", "leaseUntil", "lastAttemptAt", "lastError", "finishedAt"';

type Raw = Omit<HookRow, 'events'> & { events: string };
const toHook = (r: Raw): HookRow => ({ ...r, events: readHookEvents(r.events) });

// The hooks, hook_deliveries and hook_marks tables (docs/design.md §19).
export function pgHooks(q: Query): HookReads & HookWrites {
  return {
    async list() {
      return (await q.rows<Raw>('SELECT name, url, events, secret, "createdAt", "createdBy" FROM hooks ORDER BY name')).map(toHook);
    },
    async get(name) {
      const r = await q.one<Raw>('SELECT name, url, events, secret, "createdAt", "createdBy" FROM hooks WHERE name = $1', [name]);
      return r ? toHook(r) : null;
    },
    async stats() {
      return q.rows<HookStats>(
        `SELECT hook, COUNT(*) FILTER (WHERE state = 'pending')::int AS pending, COUNT(*) FILTER (WHERE state = 'delivered')::int AS delivered,
           COUNT(*) FILTER (WHERE state = 'gave-up')::int AS "gaveUp", MAX("lastAttemptAt") AS "lastAttemptAt",
           (SELECT d2."lastError" FROM hook_deliveries d2 WHERE d2.hook = d.hook AND d2."lastError" IS NOT NULL ORDER BY d2."lastAttemptAt" DESC, d2.id DESC LIMIT 1) AS "lastError"
         FROM hook_deliveries d GROUP BY hook ORDER BY hook`,
      );
    },
    async deliveries(hook, limit) {
      return hook === null
        ? q.rows<DeliveryRow>(`SELECT ${DELIVERY} FROM hook_deliveries ORDER BY id DESC LIMIT $1`, [limit])
        : q.rows<DeliveryRow>(`SELECT ${DELIVERY} FROM hook_deliveries WHERE hook = $1 ORDER BY id DESC LIMIT $2`, [hook, limit]);
    },
    async dueHooks(now) {
      return (await q.rows<{ hook: string }>(`SELECT DISTINCT hook FROM hook_deliveries WHERE state = 'pending' AND "nextAt" <= $1 AND ("leaseUntil" IS NULL OR "leaseUntil" <= $1) ORDER BY hook`, [now])).map((r) => r.hook);
    },
    async mark(subject) {
      return (await q.one<{ state: string }>('SELECT state FROM hook_marks WHERE subject = $1', [subject]))?.state ?? null;
    },
    async insert(h) {
      try {
        await q.guarded(() => q.count('INSERT INTO hooks (name, url, events, secret, "createdAt", "createdBy") VALUES ($1, $2, $3, $4, $5, $6)', [h.name, h.url, JSON.stringify(h.events), h.secret, h.createdAt, h.createdBy]));
      } catch (err) {
        if (isUniqueViolation(err, 'hooks_pkey')) throw hookExists(h.name, err);
        throw err;
      }
    },
    async remove(name) {
      await q.count('DELETE FROM hook_deliveries WHERE hook = $1', [name]);
      return (await q.count('DELETE FROM hooks WHERE name = $1', [name])) === 1;
    },
    async enqueue(d) {
      await q.count(`INSERT INTO hook_deliveries (hook, "eventId", type, body, "createdAt", state, "nextAt") VALUES ($1, $2, $3, $4, $5, 'pending', $5) ON CONFLICT (hook, "eventId") DO NOTHING`, [d.hook, d.eventId, d.type, d.body, d.at]);
    },
    async claim(hook, owner, now, leaseUntil, limit) {
      // SKIP LOCKED: rows another instance is claiming now are left to it, not waited for. Two
      // claims that still meet are a serialization failure, and the store runs the loser again.
      const rows = await q.rows<DeliveryRow>(
        `UPDATE hook_deliveries SET "leaseOwner" = $1, "leaseUntil" = $2 WHERE id IN (
           SELECT id FROM hook_deliveries WHERE hook = $3 AND state = 'pending' AND "nextAt" <= $4 AND ("leaseUntil" IS NULL OR "leaseUntil" <= $4)
           ORDER BY "nextAt", id LIMIT $5 FOR UPDATE SKIP LOCKED)
         RETURNING ${DELIVERY}`,
        [owner, leaseUntil, hook, now, limit],
      );
      return rows.sort((a, b) => a.nextAt - b.nextAt || a.id - b.id);
    },
    async delivered(id, at) {
      await q.count(`UPDATE hook_deliveries SET state = 'delivered', attempts = attempts + 1, "lastAttemptAt" = $1, "finishedAt" = $1, "leaseOwner" = NULL, "leaseUntil" = NULL WHERE id = $2 AND state = 'pending'`, [at, id]);
    },
    async retry(id, owner, at, nextAt, error) {
      return (await q.count(`UPDATE hook_deliveries SET attempts = attempts + 1, "lastAttemptAt" = $1, "nextAt" = $2, "lastError" = $3, "leaseOwner" = NULL, "leaseUntil" = NULL WHERE id = $4 AND state = 'pending' AND "leaseOwner" = $5`, [at, nextAt, error, id, owner])) === 1;
    },
    async giveUp(id, owner, at, error) {
      return (await q.count(`UPDATE hook_deliveries SET state = 'gave-up', attempts = attempts + 1, "lastAttemptAt" = $1, "finishedAt" = $1, "lastError" = $2, "leaseOwner" = NULL, "leaseUntil" = NULL WHERE id = $3 AND state = 'pending' AND "leaseOwner" = $4`, [at, error, id, owner])) === 1;
    },
    async setMark(subject, state, at) {
      await q.count('INSERT INTO hook_marks (subject, state, at) VALUES ($1, $2, $3) ON CONFLICT (subject) DO UPDATE SET state = excluded.state, at = excluded.at', [subject, state, at]);
    },
    async prune(before) {
      return q.count(`DELETE FROM hook_deliveries WHERE state <> 'pending' AND "finishedAt" < $1`, [before]);
    },
  };
}
