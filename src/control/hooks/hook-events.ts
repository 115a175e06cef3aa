// The events a hook may be sent (docs/control-plane.md, "Telling people: hooks"), and the CloudEvent
// 1.0 structured JSON each is sent as. The set is closed: a hook names some of them, and an
// unknown name is refused at `hook add`, never ignored.
import { randomUUID } from 'node:crypto';
import { StewardError } from '../../core/errors.js';

export const HOOK_EVENTS = [
  'run.started',
  'run.paused',
  'run.resumed',
  'run.halted',
  'run.succeeded',
  'run.stopped',
  'target.set',
  'target.converged',
  'target.behind',
] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

// What `hook test` sends: every hook takes it, whatever events it names.
export const TEST_EVENT = 'hook.test';

// The CloudEvents `type` of an event: reverse-DNS prefixed, as the spec asks.
export const EVENT_TYPE_PREFIX = 'dev.steward.';
// The CloudEvents `source` of every event steward-control sends.
export const EVENT_SOURCE = 'steward-control';

export function isHookEvent(s: string): s is HookEvent {
  return (HOOK_EVENTS as readonly string[]).includes(s);
}

// `run.halted,run.paused`: the events named, each once, in the order given; USAGE naming an
// unknown one and the known ones. `*` names every event.
export function parseHookEvents(text: string): HookEvent[] {
  const names = text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  if (names.length === 0) throw new StewardError('USAGE', `--events names no event; name some of: ${HOOK_EVENTS.join(', ')} (or * for all)`);
  if (names.length === 1 && names[0] === '*') return [...HOOK_EVENTS];
  const out: HookEvent[] = [];
  for (const n of names) {
    if (!isHookEvent(n)) throw new StewardError('USAGE', `--events: ${JSON.stringify(n.slice(0, 64))} is not an event steward-control sends; they are: ${HOOK_EVENTS.join(', ')} (or * for all)`);
    if (!out.includes(n)) out.push(n);
  }
  return out;
}

export interface CloudEvent {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  time: string;
  subject: string;
  datacontenttype: 'application/json';
  data: Record<string, unknown>;
}

// A new event of `event` about `subject` (`run/12`, `target/web`) at `at`, with a fresh id: the
// idempotency id its every delivery carries.
export function newCloudEvent(event: HookEvent | typeof TEST_EVENT, subject: string, at: number, data: Record<string, unknown>): CloudEvent {
  return { specversion: '1.0', id: randomUUID(), source: EVENT_SOURCE, type: EVENT_TYPE_PREFIX + event, time: new Date(at).toISOString(), subject, datacontenttype: 'application/json', data };
}
