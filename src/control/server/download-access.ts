// Who downloads an artifact, and whether a slot is theirs (issue 31 item 11: 64 anonymous
// connections reading 1 KB every 20 s held every slot, and a rollout halted).
//
// - A node proves it is enrolled with `Authorization: Steward-Node ...`, its node key's
//   signature (platform/download-auth.ts), which its agent hands the helper with each update.
// - An operator may download with its bearer token (`Authorization: Bearer so_...`), checked and
//   slowed on failure as on the admin API (admin/authenticate.ts), over TLS or from loopback.
// - A request with no Authorization is anonymous: helpers from before download credentials send
//   none (docs/design.md §16: the control plane is upgraded before the hosts, and the previous
//   release's agents and helpers keep working against it). Anonymous downloads share at most
//   `--anonymous-downloads` slots (default: an eighth of --max-downloads, rounded up, so 8 of 64;
//   0 refuses them with 401), so they cannot take the slots of enrolled nodes.
// - A credential that does not hold is 401, never taken as anonymous.
// Each node or operator holds at most MAX_DOWNLOADS_PER_CLIENT slots at once; and every download
// slower than the minimum rate over a window is cut (artifacts.ts), which frees its slot.
import type { IncomingMessage } from 'node:http';
import { checkDownloadClaim, DOWNLOAD_AUTH_SCHEME, parseDownloadAuthorization } from '../../platform/download-auth.js';
import { parsePublicKey } from '../../platform/keys.js';
import { logger } from '../../platform/log.js';
import type { Authenticator } from '../admin/authenticate.js';
import { credentialsAllowed, requestFacts } from '../admin/authenticate.js';
import { parseTrustedProxies } from '../operators/request-source.js';
import type { ControlStore } from '../store/store.js';

const log = logger('control:artifacts');

// The anonymous downloads of an instance that sends `max` at once, unless --anonymous-downloads says.
export function defaultAnonymousDownloads(max: number): number {
  return Math.ceil(max / 8);
}
export const MAX_DOWNLOADS_PER_CLIENT = 2;

export type Downloader = { kind: 'node' | 'operator'; id: string } | { kind: 'anonymous'; id: string };

export type Identified = { ok: true; who: Downloader } | { ok: false; status: 401 | 403; code: 'UNAUTHENTICATED' | 'FORBIDDEN'; message: string };

const NO_PROXIES = parseTrustedProxies([]);

// Who sent `req`, by its Authorization header (the rules above).
export async function identifyDownloader(req: IncomingMessage, store: ControlStore, auth: Authenticator, now: () => Promise<number>): Promise<Identified> {
  const header = req.headers.authorization;
  const facts = requestFacts(req, NO_PROXIES);
  if (header === undefined) return { ok: true, who: { kind: 'anonymous', id: facts.address } };
  if (header.startsWith(`${DOWNLOAD_AUTH_SCHEME} `)) {
    const claim = parseDownloadAuthorization(header);
    if (!claim) return refuse('the Steward-Node credential is malformed');
    const pem = await store.read((tx) => tx.nodes.key(claim.nodeId));
    if (pem === null) return refuse(`node ${claim.nodeId} is not enrolled`);
    const why = checkDownloadClaim(claim, parsePublicKey(pem), await now());
    if (why) {
      log('download refused node=%s address=%s: its credential does not hold (%s)', claim.nodeId, facts.address, why);
      return refuse(`the Steward-Node credential of node ${claim.nodeId} does not hold: ${why}`);
    }
    return { ok: true, who: { kind: 'node', id: claim.nodeId } };
  }
  const bearer = /^Bearer ([^\s]+)$/i.exec(header)?.[1];
  if (bearer === undefined) return refuse('the Authorization header is neither a Steward-Node credential nor a bearer token');
  if (!credentialsAllowed(facts)) return { ok: false, status: 403, code: 'FORBIDDEN', message: 'an operator token is refused over plain http from another host (it crossed the network in clear text: rotate it)' };
  const operator = await auth.checkToken(facts, bearer, 'bearer', (req.url ?? '').split('?')[0] ?? '');
  if (!operator) return refuse('the operator token is wrong, or its operator was removed or rotated');
  return { ok: true, who: { kind: 'operator', id: operator.name } };
}

function refuse(message: string): Identified {
  return { ok: false, status: 401, code: 'UNAUTHENTICATED', message };
}

// Download slots of one instance: `max` in all (--max-downloads), of which anonymous downloads
// hold at most `anonymousMax`, and each node or operator at most `perClientMax`.
export class DownloadSlots {
  private inFlight = 0;
  private anonymous = 0;
  private readonly perClient = new Map<string, number>();
  readonly anonymousMax: number;
  constructor(
    readonly max: number,
    anonymousMax = defaultAnonymousDownloads(max),
    readonly perClientMax = MAX_DOWNLOADS_PER_CLIENT,
  ) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`max downloads must be a whole number of at least 1, got ${max}`);
    if (!Number.isSafeInteger(anonymousMax) || anonymousMax < 0) throw new RangeError(`anonymous downloads must be a whole number, got ${anonymousMax}`);
    this.anonymousMax = Math.min(anonymousMax, max);
  }
  // A slot, or why there is none: every slot taken ('full'), the anonymous ones ('anonymous'),
  // or this client's own ('client'). `release` gives it back (once).
  take(who: Downloader): { release: () => void } | { busy: 'full' | 'anonymous' | 'client' } {
    if (this.inFlight >= this.max) return { busy: 'full' };
    const key = `${who.kind}:${who.id}`;
    if (who.kind === 'anonymous') {
      if (this.anonymous >= this.anonymousMax) return { busy: 'anonymous' };
      this.anonymous++;
    } else {
      const held = this.perClient.get(key) ?? 0;
      if (held >= this.perClientMax) return { busy: 'client' };
      this.perClient.set(key, held + 1);
    }
    this.inFlight++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.inFlight--;
        if (who.kind === 'anonymous') this.anonymous--;
        else {
          const n = (this.perClient.get(key) ?? 1) - 1;
          if (n > 0) this.perClient.set(key, n);
          else this.perClient.delete(key);
        }
      },
    };
  }
}
