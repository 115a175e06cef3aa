// The hooks' deliverer (docs/design.md §19): every instance of `serve` runs one. It takes due
// deliveries from the store's queue under a lease (hook_deliveries.leaseOwner/leaseUntil), so that
// two instances never post the same delivery at once, and one killed mid-post leaves its leases to
// run out and be taken over: every event is posted at least once, each time with its id. It runs on
// its own timer, apart from the rollout ticker, and posts without waiting for other hooks: a slow
// or dead receiver holds at most PER_HOOK of its own deliveries, each for one attempt's deadline.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Clock } from '../../platform/clock.js';
import { logger } from '../../platform/log.js';
import { recordAudit } from '../audit/record-audit.js';
import type { ControlStore, DeliveryRow, HookRow } from '../store/store.js';
import { SYSTEM_ACTOR } from '../targets/pins.js';
import { DEFAULT_POST_TIMEOUT_MS, postEvent, type PostOutcome } from './post-event.js';
import { retryDelayMs } from './retry-delay.js';
import { deliveryHeaders } from './delivery-headers.js';

const log = logger('control:hooks');

// A delivery still failing this long after its event is given up, with an audit entry.
export const DEFAULT_MAX_AGE_MS = 24 * 3600_000;
// Deliveries of one hook in flight at once, per instance.
export const PER_HOOK = 4;
// Finished deliveries are kept this long (for `hook list`'s counts), then forgotten.
export const KEEP_FINISHED_MS = 7 * 24 * 3600_000;
const PRUNE_EVERY_MS = 10 * 60_000;

export interface HookDeliverer {
  // Takes what is due and starts posting it; resolves once it is taken (not posted).
  tick(): Promise<void>;
  // Resolves when no post of this deliverer is in flight.
  idle(): Promise<void>;
  // Stops the timer; waits for the posts in flight. Idempotent.
  close(): Promise<void>;
}

export interface HookDelivererOptions {
  store: ControlStore;
  clock: Pick<Clock, 'now' | 'sleep'>;
  // How often it looks for due deliveries; 0: no timer (tests call tick()).
  pollMs: number;
  // One attempt's deadline; the lease is twice it and 5 s more.
  timeoutMs?: number;
  maxAgeMs?: number;
  ca?: string[] | undefined;
  // This instance's name in the leases (default: host, pid and a random part).
  owner?: string;
  random?: () => number;
  // Test seam: the POST itself.
  post?: (url: string, body: string, headers: Record<string, string>, o: { timeoutMs: number; ca?: string[] | undefined }) => Promise<PostOutcome>;
}

// Starts the deliverer: its timer, when pollMs > 0.
export function startHookDeliverer(o: HookDelivererOptions): HookDeliverer {
  const { store } = o;
  const timeoutMs = o.timeoutMs ?? DEFAULT_POST_TIMEOUT_MS;
  const leaseMs = 2 * timeoutMs + 5_000;
  const maxAgeMs = o.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
  const owner = o.owner ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const random = o.random ?? Math.random;
  const post = o.post ?? postEvent;
  const inFlight = new Map<string, number>();
  const posts = new Set<Promise<void>>();
  let lastPrune = -Infinity;

  const record = async (h: HookRow, d: DeliveryRow, out: PostOutcome) => {
    await store.write(async (tx) => {
      const now = await tx.now();
      if (out.ok) return tx.hooks.delivered(d.id, now);
      const error = `HOOK_DELIVERY_FAILED: ${out.message}`;
      if (now - d.createdAt >= maxAgeMs) {
        // Why an audit entry: giving up is the one way an event goes untold, and never silently.
        if (await tx.hooks.giveUp(d.id, owner, now, error)) {
          await recordAudit(tx, SYSTEM_ACTOR, 'hook.gave-up', h.name, { eventId: d.eventId, type: d.type, attempts: d.attempts + 1, queuedAt: d.createdAt, lastError: error });
          log('gave up hook=%s event=%s id=%s after %d attempt(s): %s', h.name, d.type, d.eventId, d.attempts + 1, out.message);
        }
        return;
      }
      const nextAt = now + retryDelayMs(d.attempts + 1, random());
      if (await tx.hooks.retry(d.id, owner, now, nextAt, error)) log('hook=%s event=%s id=%s attempt %d failed (%s); next at %s', h.name, d.type, d.eventId, d.attempts + 1, out.message, new Date(nextAt).toISOString());
    });
  };

  const deliver = (h: HookRow, d: DeliveryRow) => {
    inFlight.set(h.name, (inFlight.get(h.name) ?? 0) + 1);
    const p = (async () => {
      try {
        const out = await post(h.url, d.body, deliveryHeaders(h, d, o.clock.now()), { timeoutMs, ca: o.ca });
        await record(h, d, out);
        if (out.ok) log('delivered hook=%s event=%s id=%s attempt=%d in %d ms', h.name, d.type, d.eventId, d.attempts + 1, out.ms);
      } catch (err) {
        // Its lease runs out and it is taken again: at least once, never lost.
        log('delivery hook=%s id=%s not recorded: %s', h.name, d.eventId, (err as Error)?.message ?? String(err));
      } finally {
        inFlight.set(h.name, (inFlight.get(h.name) ?? 1) - 1);
      }
    })();
    posts.add(p);
    void p.finally(() => posts.delete(p));
  };

  let ticking: Promise<void> | null = null;
  const tickOnce = async () => {
    try {
      // One read when nothing is due: no write transaction for an idle queue.
      const hooks = await store.read(async (tx) => {
        const due = new Set(await tx.hooks.dueHooks(await tx.now()));
        return due.size === 0 ? [] : (await tx.hooks.list()).filter((h) => due.has(h.name));
      });
      for (const h of hooks) {
        const free = PER_HOOK - (inFlight.get(h.name) ?? 0);
        if (free <= 0) continue;
        const claimed = await store.write(async (tx) => {
          const now = await tx.now();
          return tx.hooks.claim(h.name, owner, now, now + leaseMs, free);
        });
        for (const d of claimed) deliver(h, d);
      }
      const now = o.clock.now();
      if (now - lastPrune >= PRUNE_EVERY_MS) {
        lastPrune = now;
        const n = await store.write(async (tx) => tx.hooks.prune((await tx.now()) - KEEP_FINISHED_MS));
        if (n > 0) log('forgot %d finished deliveries older than %d days', n, KEEP_FINISHED_MS / 86_400_000);
      }
    } catch (err) {
      log('hook tick failed: %s', (err as Error)?.message ?? String(err));
    }
  };
  const tick = () => (ticking ??= tickOnce().finally(() => (ticking = null)));

  const abort = new AbortController();
  if (o.pollMs > 0) {
    void (async () => {
      while (!abort.signal.aborted) {
        await tick();
        try {
          await o.clock.sleep(o.pollMs, abort.signal);
        } catch {
          return;
        }
      }
    })();
  }
  const idle = async () => {
    while (posts.size > 0) await Promise.allSettled([...posts]);
  };
  let closed: Promise<void> | null = null;
  return {
    tick,
    idle,
    close: () =>
      (closed ??= (async () => {
        abort.abort();
        await ticking;
        await idle();
      })()),
  };
}
