// The signature envelope of DESIGN §6 checked without zod (issue 8, row 5). Accepts exactly what
// envelopeSchema of release-schemas.ts accepts: {payload 1..48 KiB, sig 1..256, keyId 16
// lowercase hex}, nothing else (test/agent/control-answer.test.ts holds it to the schema inside
// the answers that carry envelopes).
import type { Envelope } from './release-schemas.js';

const KEY_ID_RE = /^[0-9a-f]{16}$/;

export type EnvelopeCheck = { ok: true; value: Envelope } | { ok: false; where: string; message: string };

export function checkEnvelope(v: unknown, where: string): EnvelopeCheck {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.keys(v).every((k) => k === 'payload' || k === 'sig' || k === 'keyId')) {
    return { ok: false, where, message: 'not an envelope {payload, sig, keyId}' };
  }
  const { payload, sig, keyId } = v as Record<string, unknown>;
  if (typeof payload !== 'string' || payload.length < 1 || payload.length > 48 * 1024) return { ok: false, where: `${where}.payload`, message: 'not a string of 1 to 49152 characters' };
  if (typeof sig !== 'string' || sig.length < 1 || sig.length > 256) return { ok: false, where: `${where}.sig`, message: 'not a string of 1 to 256 characters' };
  if (typeof keyId !== 'string' || !KEY_ID_RE.test(keyId)) return { ok: false, where: `${where}.keyId`, message: 'keyId is 16 lowercase hex characters' };
  return { ok: true, value: { payload, sig, keyId } };
}
