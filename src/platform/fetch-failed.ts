import { StewardError } from '../core/errors.js';

// The error of a fetch, a copy or an upload that could not deliver the bytes a release names.
export function fetchFailed(message: string, cause?: unknown): StewardError {
  return new StewardError('FETCH_FAILED', message, cause === undefined ? {} : { cause });
}

// What error messages and logs show of a URL: no credentials, no query (presigned URLs carry secrets).
export function describeUrl(u: URL): string {
  return `${u.protocol}//${u.host}${u.pathname}`;
}
