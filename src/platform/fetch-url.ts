// Which URLs a release may be fetched from, and which redirects a fetch follows (docs/design.md §3.1).
import { isLoopbackHost } from '../core/name-checks.js';
import { describeUrl, fetchFailed } from './fetch-failed.js';

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

// Parses a source URL and refuses, before any connection, what docs/design.md §3.1 forbids:
// anything but https, http to a non-loopback host, credentials, and file: unless allowed.
export function checkFetchUrl(raw: string, allowFile = false): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch (err) {
    throw fetchFailed('the release URL is not a valid URL', err);
  }
  if (u.username !== '' || u.password !== '') {
    throw fetchFailed(`credentials in the release URL are refused (${u.protocol}//${u.host})`);
  }
  if (u.protocol === 'https:') return u;
  if (u.protocol === 'http:') {
    if (isLoopbackHost(u.hostname)) return u;
    throw fetchFailed(`plain http is allowed only to a loopback host (127.0.0.0/8, ::1, localhost), not ${u.host}; use https`);
  }
  if (u.protocol === 'file:') {
    if (allowFile) return u;
    throw fetchFailed('file: URLs are accepted only on admin.sock');
  }
  throw fetchFailed(`the URL scheme ${u.protocol} is not allowed; use https`);
}

// Whether an HTTP status is a redirect that a fetch follows (through nextHop).
export function isRedirect(status: number): boolean {
  return REDIRECT_STATUSES.has(status);
}

// The URL a redirect from `from` leads to, after `done` redirects of at most `max`: refused
// unless it stays on the same origin and carries no credentials. `where` names the first URL.
export function nextHop(from: URL, location: string | undefined, done: number, max: number, where: string): URL {
  if (!location) throw fetchFailed(`${describeUrl(from)} answered a redirect without a Location`);
  if (done >= max) throw fetchFailed(`too many redirects (more than ${max}) fetching ${where}`);
  let to: URL;
  try {
    to = new URL(location, from);
  } catch (err) {
    throw fetchFailed(`${describeUrl(from)} answered a redirect to an invalid Location`, err);
  }
  if (to.origin !== from.origin) {
    throw fetchFailed(`redirect from ${from.origin} to ${to.origin} refused: redirects must stay on the same origin`);
  }
  if (to.username !== '' || to.password !== '') throw fetchFailed(`redirect with credentials refused (${to.origin})`);
  return to;
}
