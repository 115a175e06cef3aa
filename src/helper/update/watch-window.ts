// The watch window after `active` (docs/design.md §17): for `watchMs` after an activation's verdict
// the helper keeps watching the new version, and rolls it back on the host, as a new attempt
// through the same transaction, when it exits more than `maxRestarts` times or its supervisor
// gives up on it. The window is one file, state/<app>.watch.json, written (durable) before the
// activation's verdict and removed when a later activation of the app begins; it counts only
// while the app's journal names its attempt as `active` and `current` resolves to its version, so
// a crash at any point leaves either an open window for the version that is active, or none.
import { promises as fsp } from 'node:fs';
import { StewardError } from '../../core/errors.js';
import { describeExitReason } from '../../core/exit-reasons.js';
import { stateFile, type HostPaths } from '../../core/paths.js';
import type { ReleaseFile } from '../../core/release-schemas.js';
import * as z from '../../core/zod-mini.js';
import { attemptIdSchema, appNameSchema, epochMsSchema, intSchema, versionSchema } from '../../core/names.js';
import { writeJsonAtomic } from '../../platform/fs-atomic.js';
import { logger } from '../../platform/log.js';
import { readVersionedJson } from '../../platform/versioned-file.js';
import type { ExitInfo } from '../runners/runner.js';
import { readCurrent } from '../release-store.js';
import type { UpdateContext } from './context.js';
import { readJournal } from './journal.js';
import type { Journal } from '../../core/journal-schema.js';

const log = logger('helper:watch');

export const WATCH_SCHEMA_VERSION = 1;
// docs/design.md §17's defaults.
export const DEFAULT_WATCH_MS = 300_000;
export const DEFAULT_WATCH_MAX_RESTARTS = 2;
// The reason code of a rollback by the window, and how its message names the attempt it undoes.
export const UNHEALTHY_AFTER_ACTIVATION = 'UNHEALTHY_AFTER_ACTIVATION';
const CAUSE_RE = /\(activated by attempt ([A-Za-z0-9_-]{1,128})\)/;

export const watchFileSchema = z.strictObject({
  schemaVersion: z.literal(WATCH_SCHEMA_VERSION),
  app: appNameSchema,
  // The activation watched, and its versions: `version` is the one watched, `fromVersion` the one
  // a rollback goes back to.
  attemptId: attemptIdSchema,
  version: versionSchema,
  fromVersion: versionSchema,
  openedAt: epochMsSchema,
  until: epochMsSchema,
  maxRestarts: intSchema(0, 1000),
  // Exits of `version` heard within the window so far.
  restarts: intSchema(0),
  // The app's `previous` and highest active version before the activation: after a rollback by the
  // window, `previous` is put back (a later `agentctl rollback` does not go to the version just
  // rolled back from); the highest active version is kept for the record only.
  prior: z.strictObject({ previous: z.nullable(versionSchema), highestActive: z.nullable(versionSchema) }),
  // Why it closed early, once a rollback was asked for (kept so that a helper restart does not
  // ask twice).
  closing: z.optional(z.string().check(z.maxLength(512))),
});
export type WatchWindow = z.infer<typeof watchFileSchema>;

export function watchFile(paths: HostPaths, app: string): string {
  // Beside state/<app>.json (whose name checks the app's).
  return stateFile(paths, app).replace(/\.json$/, '.watch.json');
}

// The window an activation opens: none for a first install (nothing to go back to), for
// steward itself (its trial is its window, docs/design.md §14), for an app with no supervised
// process, or when the length is 0. `watchMs`: the control plane's, else the release's.
export function windowLength(ctx: UpdateContext, app: string, release: ReleaseFile, watchMs: number | undefined): number {
  const cfg = ctx.config.apps[app];
  if (cfg?.runner !== 'process') return 0;
  return watchMs ?? release.health?.watchMs ?? DEFAULT_WATCH_MS;
}

export async function readWatch(paths: HostPaths, app: string): Promise<WatchWindow | null> {
  try {
    return await readVersionedJson(watchFile(paths, app), WATCH_SCHEMA_VERSION, watchFileSchema, 64 * 1024);
  } catch (err) {
    // A file that does not read is no window: it is removed by the next activation.
    log('WARNING: %s', (err as Error).message);
    return null;
  }
}

export async function writeWatch(paths: HostPaths, w: WatchWindow): Promise<void> {
  await writeJsonAtomic(watchFile(paths, w.app), w, 0o600);
}

export async function removeWatch(paths: HostPaths, app: string): Promise<void> {
  await fsp.rm(watchFile(paths, app), { force: true });
}

// Whether window `w` of `app` is open at `now`: its attempt is the journal's, `active`, and
// `current` resolves to its version (`current`: that version, or null when not valid).
export function isOpen(w: WatchWindow, app: string, journal: Journal | null, current: string | null, now: number): boolean {
  if (w.app !== app || now >= w.until) return false;
  if (journal?.attemptId !== w.attemptId || journal.outcome !== 'active' || journal.targetVersion !== w.version) return false;
  return current === w.version;
}

// The app's window if it is open now (isOpen), read from the disk.
export async function openWatch(ctx: UpdateContext, app: string): Promise<WatchWindow | null> {
  const w = await readWatch(ctx.paths, app);
  if (!w || w.app !== app || ctx.clock.now() >= w.until) return null;
  const j = await readJournal(ctx.paths, app).catch(() => null);
  const cur = await readCurrent(ctx.paths, app).catch(() => null);
  return isOpen(w, app, j?.state === 'ok' ? j.journal : null, cur?.state === 'valid' ? cur.version : null, ctx.clock.now()) ? w : null;
}

// The reason message of a rollback by the window, naming the attempt it undoes.
export function unhealthyReason(w: WatchWindow, why: string): string {
  return `${why} within ${Math.round((w.until - w.openedAt) / 1000)} s of its activation (activated by attempt ${w.attemptId})`;
}

// The attempt a reason names as the cause (UNHEALTHY_AFTER_ACTIVATION only), or undefined.
export function causeOf(reason: { code: string; message: string } | undefined): string | undefined {
  if (reason?.code !== UNHEALTHY_AFTER_ACTIVATION) return undefined;
  const m = CAUSE_RE.exec(reason.message);
  return m?.[1] && attemptIdSchema.safeParse(m[1]).success ? m[1] : undefined;
}

// How one exit reads in a reason.
export function exitText(exit: ExitInfo): string {
  const how = exit.signal ? `signal ${exit.signal}` : exit.code !== null ? `code ${exit.code}` : 'an unknown status';
  return exit.reason ? `${exit.reason}, ${how}` : how;
}

// Exits that roll a watched version back at once, whatever the count: the kernel or the helper
// killed it for what it did (docs/design.md §17).
function killedFor(exit: ExitInfo): boolean {
  return exit.reason === 'OOM' || exit.reason === 'WATCHDOG';
}

export type RollBack = (app: string, w: WatchWindow, why: string) => Promise<void>;

// Hears the supervisor's decisions about exits and asks for the rollback when a window's limit is
// passed. One app's exits are handled one at a time.
export class WatchWindows {
  private readonly chains = new Map<string, Promise<void>>();
  // Told after each write of a window (the metrics textfile shows its count).
  onChange: ((app: string) => void) | undefined;

  constructor(
    private readonly ctx: UpdateContext,
    private readonly rollBack: RollBack,
  ) {}

  // An exit of `app`'s process the supervisor heard (not a stop it asked for); `gaveUp`: its
  // budget is spent and it stays down (`error`).
  exited(app: string, exit: ExitInfo, gaveUp: boolean): Promise<void> {
    return this.serially(app, () => this.onExit(app, exit, gaveUp));
  }

  // Runs `fn` after the app's earlier window work; an error is logged, never thrown.
  private serially(app: string, fn: () => Promise<void>): Promise<void> {
    const tail = (this.chains.get(app) ?? Promise.resolve()).then(fn).catch((err) => log('watch app=%s: %s', app, (err as Error).message));
    this.chains.set(app, tail);
    void tail.then(() => {
      if (this.chains.get(app) === tail) this.chains.delete(app);
    });
    return tail;
  }

  // A failure that is not an exit (liveness): true when `version`'s window is open and its rollback
  // is asked for, false when no window of that version is open.
  breach(app: string, version: string, why: string): Promise<boolean> {
    let took = false;
    return this.serially(app, async () => {
      const w = await openWatch(this.ctx, app);
      if (!w || w.version !== version) return;
      took = true;
      if (w.closing) return;
      const next: WatchWindow = { ...w, closing: unhealthyReason(w, why) };
      await writeWatch(this.ctx.paths, next);
      this.onChange?.(app);
      log('liveness app=%s version=%s failed in its watch window -> rollback', app, version);
      this.ask(app, next, next.closing as string);
    }).then(() => took);
  }

  // At the helper's start: a window whose rollback was asked for and never done (the helper
  // stopped in between) asks again.
  async resume(app: string): Promise<void> {
    const w = await openWatch(this.ctx, app);
    if (w?.closing) this.ask(app, w, w.closing);
  }

  private async onExit(app: string, exit: ExitInfo, gaveUp: boolean): Promise<void> {
    const w = await openWatch(this.ctx, app);
    if (!w) return;
    const restarts = w.restarts + 1;
    const over = gaveUp || killedFor(exit) || restarts > w.maxRestarts;
    const why = gaveUp
      ? `its supervisor gave up on it (error; its last exit: ${exitText(exit)})`
      : exit.reason && killedFor(exit)
        ? `its process was ${describeExitReason(exit.reason)}`
        : over
        ? `it exited ${restarts} times (the last with ${exitText(exit)}), more than the ${w.maxRestarts} its watch window allows`
        : '';
    const next: WatchWindow = { ...w, restarts, ...(over && !w.closing ? { closing: unhealthyReason(w, why) } : {}) };
    await writeWatch(this.ctx.paths, next);
    this.onChange?.(app);
    log('exit app=%s version=%s in its watch window: %d of %d%s', app, w.version, restarts, w.maxRestarts, over ? ' -> rollback' : '');
    if (over && !w.closing) this.ask(app, next, next.closing as string);
  }

  private ask(app: string, w: WatchWindow, why: string): void {
    // After the supervisor's pass, which holds the app's lock while it tells of the exit.
    setImmediate(() => {
      this.rollBack(app, w, why).catch((err) => {
        const busy = err instanceof StewardError && err.code === 'BUSY';
        log('%s app=%s: the rollback of %s by its watch window did not run: %s', busy ? 'note' : 'WARNING', app, w.version, (err as Error).message);
      });
    });
  }
}
