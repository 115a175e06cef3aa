// The signature header of a delivery (docs/control-plane.md, "Verifying a delivery"): HMAC-SHA256,
// keyed by the hook's secret, over `<t>.<body>`, where t is the attempt's Unix time in seconds. The
// time is signed so that a receiver can refuse an old delivery replayed (it checks t is recent).
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'steward-signature';

// `t=<seconds>,v1=<hex>` for `body` sent at `atMs`.
export function signatureHeader(secret: string, body: string, atMs: number): string {
  const t = Math.floor(atMs / 1000);
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

// Whether `header` is a valid signature of `body` with `secret` made within `toleranceS` of
// `nowMs` (what a receiver does; docs show the same in a few lines).
export function verifySignature(secret: string, body: string, header: string, nowMs: number, toleranceS = 300): boolean {
  const m = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(header);
  if (!m) return false;
  const t = Number(m[1]);
  if (Math.abs(nowMs / 1000 - t) > toleranceS) return false;
  const want = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return timingSafeEqual(want, Buffer.from(m[2] as string, 'hex'));
}
