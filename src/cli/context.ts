import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../core/errors.js';
import { hostPaths, type HostPaths } from '../core/paths.js';
import type { SocketKind } from '../protocol/schemas.js';
import { callHelper, pickSocket } from '../protocol/client.js';
import { helperClient, type HelperClient } from '../protocol/helper-client.js';
import { printLines } from './output.js';

export interface GlobalOptions {
  root?: string;
  socket?: string;
  json?: boolean;
}

export interface CliContext {
  paths: HostPaths;
  json: boolean;
  socket: { path: string; kind: SocketKind };
  // The helper behind `socket`, one method per op. When the helper cannot be reached, the error
  // also says why this socket was the one tried, and where the root prefix came from.
  helper: HelperClient;
}

let noted = false;

// The client side of the root prefix rule: --root, else STEWARD_ROOT unless root. Root is told
// on stderr (once) when its STEWARD_ROOT is ignored.
export function clientRoot(opts: GlobalOptions): string {
  const isRoot = process.getuid?.() === 0;
  const env = process.env.STEWARD_ROOT;
  if (isRoot && opts.root === undefined && env && !noted) {
    noted = true;
    printLines([`agentctl: note: STEWARD_ROOT=${env} is ignored for root (root names a root prefix with --root only, so that a variable left in a shell never moves where root writes); pass --root ${env} to use that prefix`], process.stderr);
  }
  const raw = opts.root ?? (isRoot ? undefined : env);
  return raw ? path.resolve(raw) : '';
}

// Resolves paths and the socket to talk to (docs/design.md §8: admin.sock when this process may
// open it, else helper.sock; --socket overrides, and names admin.sock by its file name).
export async function cliContext(opts: GlobalOptions): Promise<CliContext> {
  const root = clientRoot(opts);
  const paths = hostPaths(root);
  const socket = await pickSocket(paths, opts.socket);
  return {
    paths,
    json: !!opts.json,
    socket,
    helper: helperClient((request, callOpts) =>
      callHelper(socket.path, request, callOpts).catch(async (err: unknown) => {
        if (!(err instanceof StewardError) || err.code !== 'HELPER_UNREACHABLE') throw err;
        throw new StewardError('HELPER_UNREACHABLE', `${err.message} ${await whyThisSocket(opts, root, paths, socket.kind, err.details.connectErrno)}`, { cause: err, details: err.details });
      }),
    ),
  };
}

// Why agentctl tried the socket it tried, for an unreachable helper: --socket, or admin.sock
// openable, or not (absent, or not this user's), and where the root prefix came from.
async function whyThisSocket(opts: GlobalOptions, root: string, paths: HostPaths, kind: SocketKind, errno: unknown): Promise<string> {
  const uid = process.getuid?.() ?? -1;
  let why: string;
  if (opts.socket !== undefined) why = 'the socket given with --socket';
  else if (kind === 'admin') why = 'admin.sock, which this user may open';
  else {
    const exists = await fsp.lstat(paths.adminSock).then(() => true, () => false);
    why = `helper.sock, since ${paths.adminSock} ${exists ? `may not be opened by this user (uid ${uid})` : 'does not exist'}`;
  }
  const prefix = opts.root === undefined && root !== '' ? `; root prefix ${root} from STEWARD_ROOT` : '';
  const denied = errno === 'EACCES' || errno === 'EPERM' ? `; this user (uid ${uid}) may not open it: run as root, or as a member of group steward` : '';
  return `(tried ${why}${prefix})${denied}`;
}
