import type { KeyObject } from 'node:crypto';
import { checkEnvelope } from '../core/envelope-check.js';
import { checkReceiptPayload } from '../core/receipt-check.js';
import type { ReceiptPayload } from '../core/receipt-schema.js';
import type { Envelope } from '../core/release-schemas.js';
import { DOMAINS, keyIdOf, openEnvelope } from './keys.js';

// The payload of a receipt envelope signed by `publicKey` under the receipt domain, or
// null: a wrong key, domain, signature or shape is never a receipt. Safe on untrusted input.
// Checked without zod (envelope-check.ts, receipt-check.ts: each held to its schema by a
// property test), so that the agent need not load zod to take a receipt.
export function verifyReceipt(envelope: Envelope, publicKey: KeyObject): ReceiptPayload | null {
  const env = checkEnvelope(envelope, '');
  if (!env.ok) return null;
  const opened = openEnvelope(env.value, DOMAINS.receipt, new Map([[keyIdOf(publicKey), publicKey]]));
  if (!opened.ok) return null;
  return checkReceiptPayload(opened.payload);
}
