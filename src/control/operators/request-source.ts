// Who a request came from, for failure counters and the audit log (docs/design.md §12): the peer's
// address, or, when the peer is a --trusted-proxy, the address that proxy appended to
// X-Forwarded-For (entries are read right to left past every trusted proxy; the ones further
// left were written by the client and are never believed).
import { BlockList, isIP } from 'node:net';
import { escapeControlChars } from '../../core/control-chars.js';
import { StewardError } from '../../core/errors.js';

export interface TrustedProxies {
  has(address: string): boolean;
}

// The --trusted-proxy list: addresses and CIDR ranges (v4 or v6). Throws on a bad entry.
export function parseTrustedProxies(entries: readonly string[]): TrustedProxies {
  const list = new BlockList();
  for (const e of entries) {
    const [addr, bits, extra] = e.split('/');
    const family = isIP(addr ?? '');
    if (!family || extra !== undefined || (bits !== undefined && !/^\d{1,3}$/.test(bits))) throw new TypeError(`${JSON.stringify(e)} is not an IP address or CIDR range`);
    const type = family === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(addr as string, type);
    else {
      const prefix = Number(bits);
      if (prefix > (family === 6 ? 128 : 32)) throw new TypeError(`${JSON.stringify(e)} has a prefix longer than the address`);
      list.addSubnet(addr as string, prefix, type);
    }
  }
  const empty = entries.length === 0;
  return {
    has: (address) => {
      if (empty) return false;
      const a = plainAddress(address);
      const family = isIP(a);
      return family !== 0 && list.check(a, family === 6 ? 'ipv6' : 'ipv4');
    },
  };
}

// An IPv4-mapped IPv6 address as its IPv4 form; anything else as it is.
export function plainAddress(address: string): string {
  const m = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return m ? (m[1] as string) : address;
}

// Whether an address is loopback (127.0.0.0/8, ::1).
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const a = plainAddress(address);
  return a === '::1' || (isIP(a) === 4 && a.startsWith('127.'));
}

// The address a request came from: the peer, or past trusted proxies in X-Forwarded-For. Every
// entry the walk reads was written by a trusted proxy, so one that names no address (`unknown`,
// empty, garbage) is refused with BAD_REQUEST rather than skipped: skipping it would make the
// proxy itself, or an entry further left, the client, a source with counters of its own. An
// address with a port (`1.2.3.4:5678`, `[::1]:80`) or in brackets (`[::1]`) is the address.
export function requestAddress(peer: string | undefined, forwardedFor: string | string[] | undefined, trusted: TrustedProxies): string {
  let source = plainAddress(peer ?? '');
  if (!trusted.has(source) || forwardedFor === undefined) return source || 'unknown';
  const entries = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  for (let i = entries.length - 1; i >= 0 && trusted.has(source); i--) {
    const raw = entries[i] as string;
    const e = forwardedAddress(raw);
    if (e === null) {
      const shown = `"${escapeControlChars(raw.trim().slice(0, 100))}"`;
      throw new StewardError('BAD_REQUEST', `X-Forwarded-For from the trusted proxy ${source} names no client address (${shown}); the proxy must append the client's IP address`);
    }
    source = e;
  }
  return source;
}

// One X-Forwarded-For entry as a plain IP address: `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1`,
// `[2001:db8::1]`, `[2001:db8::1]:443` (an IPv4-mapped one as IPv4); null for anything else.
export function forwardedAddress(entry: string): string | null {
  const e = entry.trim();
  let host = e;
  const bracketed = /^\[([^\]]*)\](?::(\d{1,5}))?$/.exec(e);
  const v4port = /^([\d.]+):(\d{1,5})$/.exec(e);
  let port: string | undefined;
  if (bracketed) {
    host = bracketed[1] as string;
    port = bracketed[2];
    if (isIP(host) !== 6) return null;
  } else if (v4port) {
    host = v4port[1] as string;
    port = v4port[2];
    if (isIP(host) !== 4) return null;
  } else if (!isIP(host)) return null;
  if (port !== undefined && Number(port) > 65535) return null;
  return plainAddress(host.replace(/%.*$/, ''));
}

// Whether the request came to us over TLS: its own socket, or a trusted proxy that says so.
export function requestIsTls(socketTls: boolean, peer: string | undefined, forwardedProto: string | string[] | undefined, trusted: TrustedProxies): boolean {
  if (socketTls) return true;
  if (!trusted.has(plainAddress(peer ?? '')) || forwardedProto === undefined) return false;
  const last = (Array.isArray(forwardedProto) ? forwardedProto.join(',') : forwardedProto).split(',').pop()?.trim().toLowerCase();
  return last === 'https';
}

// The key failures are counted under: the address, or for IPv6 its /64 (one host commonly
// holds a whole /64, and would otherwise get a fresh counter per guess).
export function failureSourceOf(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = expandIpv6(address);
  return groups ? `${groups.slice(0, 4).join(':')}::/64` : address;
}

function expandIpv6(a: string): string[] | null {
  const [head, tail, more] = a.split('::');
  if (more !== undefined) return null;
  const h = head ? head.split(':') : [];
  const t = tail !== undefined ? (tail ? tail.split(':') : []) : null;
  // An embedded IPv4 tail counts as two groups; it never reaches the /64 prefix that matters here.
  const fill = t === null ? [] : new Array(Math.max(0, 8 - h.length - t.length)).fill('0');
  const groups = [...h, ...fill, ...(t ?? [])];
  return groups.map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? g.toLowerCase().replace(/^0+(?=.)/, '') : g));
}
