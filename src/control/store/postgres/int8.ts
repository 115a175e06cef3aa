import { StewardError } from '../../../core/errors.js';

// PostgreSQL's bigint (int8, type oid 20) as a JS number. Every time, seq and id of the store is
// a bigint column whose values stay far below 2^53; one beyond Number.MAX_SAFE_INTEGER would be
// rounded by Number() without a word, so it is an error instead (the query that read it fails).
export const INT8_OID = 20;

export function parseInt8(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) {
    throw new StewardError('STATE_INVALID', `the database returned the 64-bit integer ${text}, beyond Number.MAX_SAFE_INTEGER (${Number.MAX_SAFE_INTEGER}): refused rather than rounded`);
  }
  return n;
}
