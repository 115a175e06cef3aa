import fs, { promises as fsp } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { StewardError, toStewardError, type ReasonCode } from '../core/errors.js';
import * as z from '../core/zod-mini.js';
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
  // caller must stop mutating at once (docs/design.md §10: it stops the process).
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
    fs: refreshFs,
    onCompromised: (err) => {
      // Releasing removes owner.json, which moves the folder's mtime; that is not a takeover.
      if (state.releasing) return;
      opts.onCompromised(err);
    },
  };
  const target = path.dirname(lockPath);
  // Why an intent file: a process killed between proper-lockfile's mkdir and the owner record
  // would leave a lock with no owner, which only the 30 s stale time could take over. Our
  // identity is written beside the lock first and renamed into it once we hold it, so a lock
  // without owner.json always has its would-be owner's intent next to it.
  const intent = await writeIntent(lockPath);
  let release: () => Promise<void>;
  try {
    release = await lockOrTakeOver(target, lockPath, options, opts);
  } catch (err) {
    await fsp.rm(intent, { force: true });
    throw err;
  }
  await adoptIntent(lockPath, intent);
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

async function lockOrTakeOver(target: string, lockPath: string, options: lockfile.LockOptions, opts: HelperLockOptions): Promise<() => Promise<void>> {
  try {
    return await lockfile.lock(target, options);
  } catch (err) {
    if (!isHeldError(err)) throw toStewardError(err, 'IO_ERROR', `cannot take ${lockPath}`);
  }
  const owner = (await readOwner(path.join(lockPath, OWNER_FILE))) ?? (await liveIntent(lockPath));
  if (owner === 'none-alive') {
    log('taking over lock=%s whose owner died before recording itself', lockPath);
  } else if (!owner || (await isSameProcessAlive(owner))) {
    throw lockedError(lockPath, owner, opts);
  } else {
    log('taking over lock=%s from dead owner pid=%d', lockPath, owner.pid);
  }
  // Why: proper-lockfile removes a stale lock with rmdir, which needs an empty
  // folder, and decides staleness by mtime alone; the owner is provably dead, so
  // empty the folder and age it so that its own takeover runs now instead of in 30 s.
  await fsp.rm(path.join(lockPath, OWNER_FILE), { force: true });
  await fsp.utimes(lockPath, 0, 0);
  try {
    return await lockfile.lock(target, options);
  } catch (err2) {
    if (!isHeldError(err2)) throw toStewardError(err2, 'IO_ERROR', `cannot take ${lockPath}`);
    const now = await readOwner(path.join(lockPath, OWNER_FILE));
    throw lockedError(lockPath, now, opts);
  }
}

// The fs proper-lockfile uses, with `stat` and `utimes` done synchronously. Why: it refreshes the
// lock with a stat then a utimes every `update` ms for as long as the process lives, and through
// libuv's threadpool each is a round trip that wakes a pool thread and then the main thread; those
// refreshes were most of an idle helper's wakeups (issue 8 row 5). They touch one folder's
// metadata (on /run, a tmpfs, for the helper), microseconds without the round trip. Their
// callbacks still run asynchronously (setImmediate, no extra wakeup), as proper-lockfile expects.
// The refresh interval, the stale time and the checks it makes on each refresh are unchanged.
type Callback<T> = (err: NodeJS.ErrnoException | null, value?: T) => void;
function deferred<T>(run: () => T, cb: Callback<T>): void {
  let value: T;
  try {
    value = run();
  } catch (err) {
    setImmediate(cb, err as NodeJS.ErrnoException);
    return;
  }
  setImmediate(cb, null, value);
}
export const refreshFs = {
  ...fs,
  stat: (p: string, cb: Callback<fs.Stats>) => deferred(() => fs.statSync(p), cb),
  utimes: (p: string, atime: Date, mtime: Date, cb: Callback<void>) => deferred(() => fs.utimesSync(p, atime, mtime), cb),
};

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

// The owner file a lock holder writes beside its lock (its ProcIdentity); other keys are dropped.
const lockOwnerSchema = z.object({ pid: z.number().check(z.int()), startTicks: z.number().check(z.int()), bootId: z.string().check(z.minLength(1)) });

async function readOwner(file: string): Promise<ProcIdentity | null> {
  try {
    const owner = lockOwnerSchema.safeParse(JSON.parse(await fsp.readFile(file, 'utf8')));
    return owner.success ? owner.data : null;
  } catch {
    // Missing or unreadable: the owner is unknown here.
    return null;
  }
}

const intentPrefix = (lockPath: string) => `${path.basename(lockPath)}.owner-`;

// Writes this process's identity beside the lock (`<lock>.owner-<pid>`), atomically.
async function writeIntent(lockPath: string): Promise<string> {
  const me = (await readProcIdentity(process.pid)) ?? { pid: process.pid, startTicks: 0, bootId: await readBootId() };
  const file = `${lockPath}.owner-${process.pid}`;
  const tmp = `${file}.tmp`;
  await fsp.writeFile(tmp, JSON.stringify(me) + '\n', { mode: 0o600 });
  await fsp.rename(tmp, file);
  return file;
}

// Once the lock is ours, the intent becomes its owner.json in one rename.
async function adoptIntent(lockPath: string, intent: string): Promise<void> {
  // proper-lockfile checks on every refresh that the folder's mtime is the one it set;
  // adding owner.json moves it, so put it back or the next refresh reports a takeover.
  const before = await fsp.stat(lockPath);
  await fsp.rename(intent, path.join(lockPath, OWNER_FILE));
  await fsp.utimes(lockPath, before.atime, before.mtime);
}

// For a lock without owner.json: the identity of another live process that meant to take it
// (its owner may be between the mkdir and the rename), or 'none-alive' when every intent beside
// it belongs to a dead process, so the lock's owner died before it could record itself. Dead
// intents are removed.
async function liveIntent(lockPath: string): Promise<ProcIdentity | 'none-alive'> {
  const dir = path.dirname(lockPath);
  const prefix = intentPrefix(lockPath);
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(prefix) || name.endsWith('.tmp') || name === `${prefix}${process.pid}`) continue;
    const file = path.join(dir, name);
    const who = await readOwner(file);
    if (who && (await isSameProcessAlive(who))) return who;
    // Why: a dead process's intent can never become an owner record; it only misleads.
    await fsp.rm(file, { force: true });
  }
  return 'none-alive';
}
