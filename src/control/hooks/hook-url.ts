// Where a hook may post (docs/control-plane.md, "Telling people: hooks"): https anywhere, plain http
// only to a loopback host (tests, a local relay), never a URL with a user or password in it
// (`hook list` shows the URL) nor a fragment.
import { StewardError } from '../../core/errors.js';
import { isLoopbackHost } from '../../core/name-checks.js';

export const MAX_HOOK_URL = 2048;

// The URL checked, or USAGE saying what is wrong with it.
export function checkHookUrl(text: string): URL {
  const bad = (why: string) => new StewardError('USAGE', `--url ${JSON.stringify(text.slice(0, 200))}: ${why}`);
  if (text.length > MAX_HOOK_URL) throw bad(`longer than ${MAX_HOOK_URL} characters`);
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw bad('not a URL');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw bad('hooks post over https (or http to a loopback host)');
  if (u.protocol === 'http:' && !isLoopbackHost(u.hostname)) throw bad('plain http is only for a loopback host (127.0.0.1, [::1], localhost); use https');
  if (u.username || u.password) throw bad('holds a user or password; put a credential in the receiver, the signature proves who sends');
  if (u.hash) throw bad('holds a #fragment, which is never sent');
  return u;
}
