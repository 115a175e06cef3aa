import type { DeliveryRow, HookReads, HookRow, HookStats, HookWrites } from '../store.js';
import { hookExists, readHookEvents } from '../hook-rows.js';
import type { Prepare } from './prepare.js';

const DELIVERY = 'id, hook, eventId, type, body, createdAt, state, attempts, nextAt, leaseOwner, leaseUntil, lastAttemptAt, lastError, finishedAt';

type Raw = Omit<HookRow, 'events'> & { events: string };
const toHook = (r: Raw): HookRow => ({ ...r, events: readHookEvents(r.events) });

// The hooks, hook_deliveries and hook_marks tables (docs/design.md §19).
export function sqliteHooks(q: Prepare): HookReads & HookWrites {
  return {
    async list() {
      return (q('SELECT name, url, events, secret, createdAt, createdBy FROM hooks ORDER BY name').all() as Raw[]).map(toHook);
    },
    async get(name) {
      const r = q('SELECT name, url, events, secret, createdAt, createdBy FROM hooks WHERE name = ?').get(name) as Raw | undefined;
      return r ? toHook(r) : null;
    },
    async stats() {
      return q(
        `SELECT hook, SUM(state = 'pending') AS pending, SUM(state = 'delivered') AS delivered, SUM(state = 'gave-up') AS gaveUp,
           MAX(lastAttemptAt) AS lastAttemptAt,
           (SELECT d2.lastError FROM hook_deliveries d2 WHERE d2.hook = d.hook AND d2.lastError IS NOT NULL ORDER BY d2.lastAttemptAt DESC, d2.id DESC LIMIT 1) AS lastError
         FROM hook_deliveries d GROUP BY hook ORDER BY hook`,
      ).all() as HookStats[];
    },
    async deliveries(hook, limit) {
      return (hook === null
        ? q(`SELECT ${DELIVERY} FROM hook_deliveries ORDER BY id DESC LIMIT ?`).all(limit)
        : q(`SELECT ${DELIVERY} FROM hook_deliveries WHERE hook = ? ORDER BY id DESC LIMIT ?`).all(hook, limit)) as DeliveryRow[];
    },
    async dueHooks(now) {
      return q(`SELECT DISTINCT hook FROM hook_deliveries WHERE state = 'pending' AND nextAt <= ? AND (leaseUntil IS NULL OR leaseUntil <= ?) ORDER BY hook`).pluck().all(now, now) as string[];
    },
    async mark(subject) {
      return (q('SELECT state FROM hook_marks WHERE subject = ?').pluck().get(subject) as string | undefined) ?? null;
    },
    async insert(h) {
      try {
        q('INSERT INTO hooks (name, url, events, secret, createdAt, createdBy) VALUES (?, ?, ?, ?, ?, ?)').run(h.name, h.url, JSON.stringify(h.events), h.secret, h.createdAt, h.createdBy);
      } catch (err) {
        if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw hookExists(h.name, err);
        throw err;
      }
    },
    async remove(name) {
      q('DELETE FROM hook_deliveries WHERE hook = ?').run(name);
      return q('DELETE FROM hooks WHERE name = ?').run(name).changes === 1;
    },
    async enqueue(d) {
      q(`INSERT INTO hook_deliveries (hook, eventId, type, body, createdAt, state, nextAt) VALUES (?, ?, ?, ?, ?, 'pending', ?) ON CONFLICT (hook, eventId) DO NOTHING`).run(d.hook, d.eventId, d.type, d.body, d.at, d.at);
    },
    async claim(hook, owner, now, leaseUntil, limit) {
      // SQLite: the write transaction excludes every other writer, so what this selects is this
      // caller's alone until it commits.
      return q(
        `UPDATE hook_deliveries SET leaseOwner = ?, leaseUntil = ? WHERE id IN (
           SELECT id FROM hook_deliveries WHERE hook = ? AND state = 'pending' AND nextAt <= ? AND (leaseUntil IS NULL OR leaseUntil <= ?) ORDER BY nextAt, id LIMIT ?)
         RETURNING ${DELIVERY}`,
      ).all(owner, leaseUntil, hook, now, now, limit).sort((a, b) => (a as DeliveryRow).nextAt - (b as DeliveryRow).nextAt || (a as DeliveryRow).id - (b as DeliveryRow).id) as DeliveryRow[];
    },
    async delivered(id, at) {
      q(`UPDATE hook_deliveries SET state = 'delivered', attempts = attempts + 1, lastAttemptAt = ?, finishedAt = ?, leaseOwner = NULL, leaseUntil = NULL WHERE id = ? AND state = 'pending'`).run(at, at, id);
    },
    async retry(id, owner, at, nextAt, error) {
      return q(`UPDATE hook_deliveries SET attempts = attempts + 1, lastAttemptAt = ?, nextAt = ?, lastError = ?, leaseOwner = NULL, leaseUntil = NULL WHERE id = ? AND state = 'pending' AND leaseOwner = ?`).run(at, nextAt, error, id, owner).changes === 1;
    },
    async giveUp(id, owner, at, error) {
      return q(`UPDATE hook_deliveries SET state = 'gave-up', attempts = attempts + 1, lastAttemptAt = ?, finishedAt = ?, lastError = ?, leaseOwner = NULL, leaseUntil = NULL WHERE id = ? AND state = 'pending' AND leaseOwner = ?`).run(at, at, error, id, owner).changes === 1;
    },
    async setMark(subject, state, at) {
      q('INSERT INTO hook_marks (subject, state, at) VALUES (?, ?, ?) ON CONFLICT (subject) DO UPDATE SET state = excluded.state, at = excluded.at').run(subject, state, at);
    },
    async prune(before) {
      return q(`DELETE FROM hook_deliveries WHERE state <> 'pending' AND finishedAt < ?`).run(before).changes;
    },
  };
}
