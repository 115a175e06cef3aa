// Where the helper may fetch a release's tarball from (docs/design.md §18: "downloads never halt a
// fleet on one host's word"). Every control-plane instance serves the artifacts of the shared
// catalog at the same path (`/v1/artifacts/<app>/<version>.tgz`), and the signed integrity makes
// any instance's copy as good as another's; so an artifact path is tried at each control plane
// the node knows, in turn:
//
// - a manifest url that is a path (`/v1/artifacts/web/1.2.0.tgz`) is resolved against each
//   control-plane URL;
// - an absolute url whose path is under /v1/artifacts/ and whose origin is one of the node's
//   control-plane origins (every manifest `release add --base-url` signed, compatibility, §16) is
//   tried as signed first, then at the same path on each other control-plane origin;
// - any other url (`release add --url`, a CDN, an object store) is tried as signed, alone.
//
// The node's download credential goes to a control-plane origin only (authFor).
import { ARTIFACTS_PREFIX } from '../../core/control-paths.js';
import type { FetchAuth } from '../../platform/download-auth.js';

// Each URL to try, in order, without repeats: the manifest's own first when it is absolute.
export function artifactSources(manifestUrl: string, controlPlanes: readonly string[]): string[] {
  const origins = originsOf(controlPlanes);
  const out: string[] = [];
  const add = (u: string) => {
    if (!out.includes(u)) out.push(u);
  };
  if (manifestUrl.startsWith('/') && !manifestUrl.startsWith('//')) {
    if (!manifestUrl.startsWith(ARTIFACTS_PREFIX)) return [];
    for (const o of origins) add(new URL(manifestUrl, o).href);
    return out;
  }
  let u: URL;
  try {
    u = new URL(manifestUrl);
  } catch {
    // Not a URL: the fetch says so, naming it (fetch-url.ts).
    return [manifestUrl];
  }
  add(manifestUrl);
  if (!u.pathname.startsWith(ARTIFACTS_PREFIX) || !origins.includes(u.origin) || u.username !== '' || u.password !== '') return out;
  for (const o of origins) add(new URL(`${u.pathname}${u.search}`, o).href);
  return out;
}

// The distinct origins of a list of control-plane URLs, in order (unparsable ones left out).
export function originsOf(urls: readonly string[]): string[] {
  const out: string[] = [];
  for (const raw of urls) {
    try {
      const o = new URL(raw).origin;
      if (o !== 'null' && !out.includes(o)) out.push(o);
    } catch {
      // skip: the agent and the host config check their URLs; a bad one names no origin
    }
  }
  return out;
}

// The credential for a fetch of `url`: the node's Authorization header when the URL is on the
// origin it was given for or on one of the node's control-plane origins, else none.
export function authFor(url: string, auth: FetchAuth | undefined, controlPlanes: readonly string[]): FetchAuth | undefined {
  if (!auth) return undefined;
  let origin: string;
  try {
    origin = new URL(url).origin;
  } catch {
    return undefined;
  }
  return origin === auth.origin || originsOf(controlPlanes).includes(origin) ? { origin, authorization: auth.authorization } : undefined;
}
