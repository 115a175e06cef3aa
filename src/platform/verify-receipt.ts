import type { KeyObject } from 'node:crypto';
import { receiptPayloadSchema, type ReceiptPayload } from '../core/receipt-schema.js';
import { envelopeSchema, type Envelope } from '../core/release-schemas.js';
import { DOMAINS, keyIdOf, openEnvelope } from './keys.js';

// The payload of a receipt envelope signed by `publicKey` under the receipt domain, or
// null: a wrong key, domain, signature or shape is never a receipt. Safe on untrusted input.
export function verifyReceipt(envelope: Envelope, publicKey: KeyObject): ReceiptPayload | null {
  const env = envelopeSchema.safeParse(envelope);
  if (!env.success) return null;
  const opened = openEnvelope(env.data, DOMAINS.receipt, new Map([[keyIdOf(publicKey), publicKey]]));
  if (!opened.ok) return null;
  const payload = receiptPayloadSchema.safeParse(opened.payload);
  return payload.success ? payload.data : null;
}
