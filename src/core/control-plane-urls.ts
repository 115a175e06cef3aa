// `controlPlane.url` as one URL or a list of them (docs/design.md §13): the agent tries them in order and
// stays on the last one that answered. Which URLs are allowed (https, loopback http) is
// agent/control-plane-url.ts's, checked per entry when the agent starts.
import * as z from './zod-mini.js';

// At most this many control-plane URLs: each is tried once per heartbeat round, within a 30 s
// deadline each, so a longer list only lengthens a round in which none answers.
export const MAX_CONTROL_PLANE_URLS = 8;

// The form URLs are compared in ("https://cp" and "https://cp/" are one URL).
function sameUrlKey(raw: string): string {
  try {
    return new URL(raw).href;
  } catch {
    return raw;
  }
}

// Whether two URLs name the same control plane URL.
export function sameControlPlaneUrl(a: string, b: string): boolean {
  return sameUrlKey(a) === sameUrlKey(b);
}

// The first URL that a list repeats, or null.
function repeatedUrl(urls: readonly string[]): string | null {
  const seen = new Set<string>();
  for (const u of urls) {
    const key = sameUrlKey(u);
    if (seen.has(key)) return u;
    seen.add(key);
  }
  return null;
}

// Why the list `urls` is refused (empty, too long, a URL twice), or null.
export function controlPlaneListProblem(urls: readonly string[]): string | null {
  if (urls.length === 0) return 'a list of control plane URLs needs at least one URL';
  if (urls.length > MAX_CONTROL_PLANE_URLS) return `a list of control plane URLs has at most ${MAX_CONTROL_PLANE_URLS} URLs, not ${urls.length}`;
  const twice = repeatedUrl(urls);
  return twice === null ? null : `the control plane URL ${twice} is listed twice`;
}

const listRule = z.refine((v: unknown) => typeof v === 'string' || controlPlaneListProblem(v as string[]) === null, {
  error: (i) => controlPlaneListProblem(i.input as string[]) ?? undefined,
});

// A non-empty list of distinct URLs, at most MAX_CONTROL_PLANE_URLS.
export const controlPlaneUrlListSchema = z.array(z.url()).check(listRule);

// `controlPlane.url`: one URL (as every host config before lists) or a list of them. The list's
// rule is checked on the union, not inside its array branch: zod words a union whose branches
// both fail "invalid input", which would hide which rule a list broke.
export const controlPlaneUrlSchema = z.union([z.url(), z.array(z.url())], { error: `a URL, or a list of 1 to ${MAX_CONTROL_PLANE_URLS} URLs` }).check(listRule);

// The URLs of a `controlPlane.url`, in the order they are tried.
export function controlPlaneUrls(url: string | readonly string[]): string[] {
  return typeof url === 'string' ? [url] : [...url];
}
