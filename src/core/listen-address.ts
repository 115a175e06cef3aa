import { isIP } from 'node:net';
import path from 'node:path';
import * as z from './zod-mini.js';

// apps.<app>.sockets (docs/design.md §17 "Zero-downtime handover"): the listening sockets the helper
// binds for an app and hands to each of its processes as systemd does (LISTEN_FDS). `listen` is a
// TCP address, HOST:PORT with HOST an IPv4 address or a bracketed IPv6 one ("0.0.0.0:8080",
// "127.0.0.1:80", "[::]:8080"), or an absolute path for a Unix socket. Host names are refused: a
// name resolves differently over time and the socket must be the same one across every update.

export type ListenAddress = { kind: 'tcp'; host: string; port: number; family: 4 | 6 } | { kind: 'unix'; path: string };

// A socket name: what LISTEN_FDNAMES carries (systemd's FileDescriptorName= rules: no ':', no
// whitespace or control characters), kept to letters, digits, '_', '.' and '-'.
export const SOCKET_NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/;
// sun_path holds 108 bytes with its terminating NUL.
const UNIX_PATH_MAX = 107;

// The address `text` names, or a sentence saying why it names none.
export function parseListenAddress(text: string): ListenAddress | string {
  if (text.startsWith('/')) {
    if (Buffer.byteLength(text) > UNIX_PATH_MAX) return `the Unix socket path ${JSON.stringify(text.slice(0, 40))}... is longer than ${UNIX_PATH_MAX} bytes`;
    if (path.posix.normalize(text) !== text || text.endsWith('/')) return `${JSON.stringify(text)} is not a normalized absolute path`;
    if (/[\0\n]/.test(text)) return 'a Unix socket path cannot hold NUL or a newline';
    return { kind: 'unix', path: text };
  }
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([0-9.]+)):([0-9]{1,5})$/.exec(text);
  if (!m) return `${JSON.stringify(text.slice(0, 80))} is neither HOST:PORT (an IPv4 address, or an IPv6 one in brackets) nor an absolute path`;
  const host = (m[1] ?? m[2]) as string;
  const family = isIP(host);
  if (family === 0 || (m[1] !== undefined) !== (family === 6)) return `${JSON.stringify(host)} is not an IPv4 address or a bracketed IPv6 address`;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return `port ${m[3]} is outside 1-65535`;
  return { kind: 'tcp', host, port, family: family as 4 | 6 };
}

// The address as the config writes it, normalized ("[::]:80"), to compare two declarations.
export function listenKey(a: ListenAddress): string {
  return a.kind === 'unix' ? a.path : a.family === 6 ? `[${a.host.toLowerCase()}]:${a.port}` : `${a.host}:${a.port}`;
}

// Two TCP addresses of one family on the same port where one is that family's wildcard overlap: binding
// both fails (EADDRINUSE), so the config refuses them up front.
export function overlaps(a: ListenAddress, b: ListenAddress): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'unix' || b.kind === 'unix') return listenKey(a) === listenKey(b);
  // An IPv6 socket is bound IPv6-only (socket-keeper.ts), so the two families never overlap.
  if (a.port !== b.port || a.family !== b.family) return false;
  const wild = (x: { host: string }) => x.host === '0.0.0.0' || x.host === '::';
  return listenKey(a) === listenKey(b) || wild(a) || wild(b);
}

export interface SocketDecl {
  name: string;
  listen: string;
}

const socketSchema = z.strictObject({
  name: z.string().check(z.regex(SOCKET_NAME_RE, 'a socket name is 1-64 of A-Z a-z 0-9 _ . -')),
  listen: z.pipe(
    z.string().check(z.maxLength(256)),
    z.transform((v: string, ctx) => {
      const r = parseListenAddress(v);
      if (typeof r !== 'string') return v;
      ctx.issues.push({ code: 'custom', message: r, input: v });
      return z.NEVER;
    }),
  ),
});

// The most sockets one app may have (systemd has no limit; 16 fds is past any app seen).
export const MAX_SOCKETS = 16;

export const socketsSchema = z.pipe(
  z.array(socketSchema).check(z.minLength(1), z.maxLength(MAX_SOCKETS)),
  z.transform((list: SocketDecl[], ctx) => {
    const names = new Set<string>();
    for (const s of list) {
      if (names.has(s.name)) ctx.issues.push({ code: 'custom', message: `the socket name ${s.name} is used twice`, input: list });
      names.add(s.name);
    }
    return list;
  }),
);

// The host's sockets that overlap, as "apps.a.sockets[0] (0.0.0.0:80) and apps.b.sockets[1] (127.0.0.1:80)", or null.
export function findOverlap(apps: Record<string, { sockets?: SocketDecl[] | undefined }>): string | null {
  const all: Array<{ where: string; addr: ListenAddress; text: string }> = [];
  for (const [app, cfg] of Object.entries(apps)) {
    (cfg.sockets ?? []).forEach((s, i) => {
      const addr = parseListenAddress(s.listen);
      if (typeof addr !== 'string') all.push({ where: `apps.${app}.sockets[${i}]`, addr, text: s.listen });
    });
  }
  for (let i = 0; i < all.length; i++) {
    for (let j = i + 1; j < all.length; j++) {
      const a = all[i] as (typeof all)[number];
      const b = all[j] as (typeof all)[number];
      if (overlaps(a.addr, b.addr)) return `${a.where} (${a.text}) and ${b.where} (${b.text})`;
    }
  }
  return null;
}
