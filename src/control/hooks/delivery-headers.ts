// The headers of a delivery (docs/control-plane.md, "Telling people: hooks"): CloudEvents' structured
// content type, the event's id as idempotency key, and the signature of this attempt.
import { readOwnVersion } from '../../platform/own-version.js';
import type { DeliveryRow, HookRow } from '../store/store.js';
import { SIGNATURE_HEADER, signatureHeader } from './sign-event.js';

// The headers of one attempt of `d` to `h`, signed at `atMs`.
export function deliveryHeaders(h: Pick<HookRow, 'secret'>, d: Pick<DeliveryRow, 'eventId' | 'body'>, atMs: number): Record<string, string> {
  return {
    'content-type': 'application/cloudevents+json; charset=utf-8',
    'user-agent': `steward-control/${readOwnVersion()}`,
    'idempotency-key': d.eventId,
    [SIGNATURE_HEADER]: signatureHeader(h.secret, d.body, atMs),
  };
}
