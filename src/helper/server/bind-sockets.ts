import { constants as fsc, promises as fsp } from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import type { SocketKind } from '../../protocol/schemas.js';
import { lookupGroup } from '../../platform/users.js';

// Binding the local API's sockets without a moment of wider access (docs/design.md §7):
// the run folder is created root-only, each socket is bound under umask 077 and
// checked, then chmod/chown'd, and only then is the folder opened to the group.

export const SOCKET_GROUP = 'steward';
const LISTEN_BACKLOG = 4096;

async function openDirNoFollow(dir: string): Promise<fsp.FileHandle> {
  try {
    return await fsp.open(dir, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') {
      throw new StewardError('ROOT_UNSAFE', `refusing run folder ${dir}: it is a symlink or not a folder`, { cause: err });
    }
    throw err;
  }
}

async function stewardGid(group: string): Promise<number | null> {
  if (process.getuid?.() !== 0) return null;
  return (await lookupGroup(group))?.gid ?? null;
}

// Creates the run folder 0700 (refusing a symlink or a folder owned by someone else).
// An existing folder keeps its mode unless group or others may write to it: a
// running helper may have opened it already, and each socket is private on its own.
export async function prepareRunDir(runDir: string): Promise<void> {
  await fsp.mkdir(path.dirname(runDir), { recursive: true, mode: 0o755 });
  await fsp.mkdir(runDir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  const fh = await openDirNoFollow(runDir);
  try {
    const st = await fh.stat();
    if (st.uid !== process.getuid?.()) {
      throw new StewardError('ROOT_UNSAFE', `refusing run folder ${runDir}: owned by uid ${st.uid}, not this helper`);
    }
    // Why: a folder others may write to would let them swap our socket files; close it (by fd, no path race).
    if ((st.mode & 0o022) !== 0) await fh.chmod(0o700);
  } finally {
    await fh.close();
  }
}

// After both sockets are bound and chmod'd: 0750 root:steward, so the group can reach helper.sock.
export async function openRunDir(runDir: string, group = SOCKET_GROUP): Promise<void> {
  const fh = await openDirNoFollow(runDir);
  try {
    const gid = await stewardGid(group);
    if (gid !== null) await fh.chown(0, gid);
    await fh.chmod(0o750);
  } finally {
    await fh.close();
  }
}

// Binds `server` at `socketPath`: removes a stale socket, listens under umask 077,
// checks the file came out private, then sets its final owner and mode.
export async function bindSocket(server: net.Server, socketPath: string, kind: SocketKind, group = SOCKET_GROUP): Promise<void> {
  // Why: a socket left by a killed helper makes bind fail; the caller holds helper.lock, so it is ours.
  await fsp.rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => {
      server.off('listening', onListening);
      reject(err);
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    // bind(2) runs synchronously inside listen() for a path, so the umask covers exactly it.
    const old = process.umask(0o077);
    try {
      // A deep backlog (the kernel caps it at somaxconn) absorbs a burst of connections
      // while the cap evicts idle ones, so a connect(2) from `status` does not get EAGAIN.
      server.listen({ path: socketPath, backlog: LISTEN_BACKLOG });
    } finally {
      process.umask(old);
    }
  });
  const st = await fsp.lstat(socketPath);
  if (!st.isSocket() || st.uid !== process.getuid?.() || (st.mode & 0o077) !== 0) {
    server.close();
    throw new StewardError(
      'INTERNAL',
      `refusing to serve ${socketPath}: it was created with mode ${(st.mode & 0o777).toString(8)} (expected no group or other bits)`,
    );
  }
  if (kind === 'helper') {
    // Group first, then mode: the group bits are granted only once the group is `steward`.
    const gid = await stewardGid(group);
    if (gid !== null) await fsp.chown(socketPath, 0, gid);
    await fsp.chmod(socketPath, 0o660);
  } else {
    await fsp.chmod(socketPath, 0o600);
  }
}
