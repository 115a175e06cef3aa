import { promises as fsp } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { StewardError, toStewardError, type ReasonCode } from '../core/errors.js';
import { logger } from './log.js';
import { isSameProcessAlive, readBootId, readProcIdentity, type ProcIdentity } from './proc-identity.js';

const log = logger('platform:lock');
const OWNER_FILE = 'owner.json';

export interface HelperLock {
  // Gives the lock up. Idempotent: a second call does nothing.
  release(): Promise<void>;
}

export interface HelperLockOptions {
  // Called when another process took the lock or its folder vanished: the
  // caller must stop mutating at once (DESIGN §10: it stops the process).
  onCompromised: (err: Error) => void;
  // Milliseconds after the last refresh at which proper-lockfile calls a lock stale.
  stale?: number;
  update?: number;
  // Who holds this kind of lock, for the error (default steward-helper), and the code a held
  // lock throws (default HELPER_LOCKED). The agent folder's lock uses steward-agent / AGENT_LOCKED.
  holder?: string;
  lockedCode?: ReasonCode;
}

// Takes the one-helper-per-root lock at `lockPath` (a folder made by proper-lockfile).
// A lock whose recorded owner is provably dead (SIGKILL, reboot) is taken over at
// once; a live owner's lock never is: that throws HELPER_LOCKED.
export async function acquireHelperLock(lockPath: string, opts: HelperLockOptions): Promise<HelperLock> {
  const state = { releasing: false };
  const options: lockfile.LockOptions = {
    lockfilePath: lockPath,
    realpath: false,
    stale: opts.stale ?? 30_000,
    update: opts.update ?? 5_000,
    retries: 0,
    onCompromised: (err) => {
      // Releasing removes owner.json, which moves the folder's mtime; that is not a takeover.
      if (state.releasing) return;
      opts.onCompromised(err);
    },
  };
  const target = path.dirname(lockPath);
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(target, options);
  } catch (err) {
    if (!isHeldError(err)) throw toStewardError(err, 'IO_ERROR', `cannot take ${lockPath}`);
    const owner = await readOwner(lockPath);
    if (!owner || (await isSameProcessAlive(owner))) throw lockedError(lockPath, owner, opts);
    log('taking over lock=%s from dead owner pid=%d', lockPath, owner.pid);
    // Why: proper-lockfile removes a stale lock with rmdir, which needs an empty
    // folder, and decides staleness by mtime alone; the owner is provably dead, so
    // empty the folder and age it so that its own takeover runs now instead of in 30 s.
    await fsp.rm(path.join(lockPath, OWNER_FILE), { force: true });
    await fsp.utimes(lockPath, 0, 0);
    try {
      release = await lockfile.lock(target, options);
    } catch (err2) {
      if (!isHeldError(err2)) throw toStewardError(err2, 'IO_ERROR', `cannot take ${lockPath}`);
      throw lockedError(lockPath, await readOwner(lockPath), opts);
    }
  }
  await writeOwner(lockPath);
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      state.releasing = true;
      await fsp.rm(path.join(lockPath, OWNER_FILE), { force: true });
      try {
        await release();
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ERELEASED') throw err;
        // The refresh timer saw our own unlink as a foreign change and let go; the folder is still there.
        await fsp.rmdir(lockPath).catch(() => {});
      }
    },
  };
}

function isHeldError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  // ENOTEMPTY: proper-lockfile found the lock stale by mtime but owner.json is still
  // inside, so its rmdir failed; the owner decides, not the mtime.
  return code === 'ELOCKED' || code === 'ENOTEMPTY' || code === 'EEXIST';
}

function lockedError(lockPath: string, owner: ProcIdentity | null, opts: HelperLockOptions): StewardError {
  const who = owner ? `pid ${owner.pid}` : 'pid unknown';
  return new StewardError(opts.lockedCode ?? 'HELPER_LOCKED', `another ${opts.holder ?? 'steward-helper'} (${who}) holds ${lockPath}`);
}

async function readOwner(lockPath: string): Promise<ProcIdentity | null> {
  try {
    const raw = JSON.parse(await fsp.readFile(path.join(lockPath, OWNER_FILE), 'utf8')) as Partial<ProcIdentity>;
    if (
      Number.isSafeInteger(raw.pid) &&
      Number.isSafeInteger(raw.startTicks) &&
      typeof raw.bootId === 'string' &&
      raw.bootId.length > 0
    ) {
      return { pid: raw.pid!, startTicks: raw.startTicks!, bootId: raw.bootId };
    }
    return null;
  } catch {
    // Missing or half-written: the owner is unknown, so only proper-lockfile's stale time may take it over.
    return null;
  }
}

async function writeOwner(lockPath: string): Promise<void> {
  const me = (await readProcIdentity(process.pid)) ?? { pid: process.pid, startTicks: 0, bootId: await readBootId() };
  // proper-lockfile checks on every refresh that the folder's mtime is the one it set;
  // creating owner.json moves it, so put it back or the next refresh reports a takeover.
  const before = await fsp.stat(lockPath);
  await fsp.writeFile(path.join(lockPath, OWNER_FILE), JSON.stringify(me) + '\n', { mode: 0o600 });
  await fsp.utimes(lockPath, before.atime, before.mtime);
}
