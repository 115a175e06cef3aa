import path from 'node:path';
import { hostPaths, type HostPaths } from '../core/paths.js';
import type { SocketKind } from '../protocol/schemas.js';
import { pickSocket } from '../protocol/client.js';

export interface GlobalOptions {
  root?: string;
  socket?: string;
  json?: boolean;
}

export interface CliContext {
  paths: HostPaths;
  json: boolean;
  socket: { path: string; kind: SocketKind };
}

// The client side of the root prefix rule: --root, else STEWARD_ROOT unless root.
export function clientRoot(opts: GlobalOptions): string {
  const isRoot = process.getuid?.() === 0;
  const raw = opts.root ?? (isRoot ? undefined : process.env.STEWARD_ROOT);
  return raw ? path.resolve(raw) : '';
}

// Resolves paths and the socket to talk to (DESIGN §8: admin.sock when this process may
// open it, else helper.sock; --socket overrides, and names admin.sock by its file name).
export async function cliContext(opts: GlobalOptions): Promise<CliContext> {
  const paths = hostPaths(clientRoot(opts));
  const socket = await pickSocket(paths, opts.socket);
  return { paths, json: !!opts.json, socket };
}
