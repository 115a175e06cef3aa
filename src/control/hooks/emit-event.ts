// Queues an event for every hook that names it, in the caller's transaction (docs/design.md §19): the
// event commits with the change it tells of, or neither does, so none is lost and none invented.
// Its body is fixed here, so that every attempt sends the same bytes with the same id.
import { logger } from '../../platform/log.js';
import type { StoreTx } from '../store/store.js';
import { newCloudEvent, type HookEvent } from './hook-events.js';

const log = logger('control:hooks');

// Queues `event` about `subject` for the hooks that name it; the event's id, or null when no hook
// names it (nothing is written then).
export async function emitEvent(tx: Pick<StoreTx, 'now' | 'hooks'>, event: HookEvent, subject: string, data: Record<string, unknown>): Promise<string | null> {
  const hooks = (await tx.hooks.list()).filter((h) => h.events.includes(event));
  if (hooks.length === 0) return null;
  const at = await tx.now();
  const ce = newCloudEvent(event, subject, at, data);
  const body = JSON.stringify(ce);
  for (const h of hooks) await tx.hooks.enqueue({ hook: h.name, eventId: ce.id, type: ce.type, body, at });
  log('queued event=%s id=%s subject=%s for hook(s) %s', event, ce.id, subject, hooks.map((h) => h.name).join(','));
  return ce.id;
}
