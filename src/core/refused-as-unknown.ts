import { StewardError, type ReasonCode } from './errors.js';

// Whether a refusal is a strict schema of an older peer refusing `key` as unknown: an error with
// `code` (BAD_REQUEST from a helper, USAGE from a steward-control operation) naming the key in
// quotes after "Unrecognized key(s)" (core/format-issues.ts). A refusal of the key's content
// ("indexedManifest.sig: ...") or of anything else is not one.
export function refusedAsUnknown(err: unknown, key: string, code: ReasonCode = 'BAD_REQUEST'): boolean {
  if (!(err instanceof StewardError) || err.code !== code) return false;
  const at = err.message.search(/nrecognized keys?:/);
  return at >= 0 && err.message.slice(at).includes(`"${key}"`);
}
