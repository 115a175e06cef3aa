import type { KeyObject } from 'node:crypto';
import { constants as fsc, lstatSync, promises as fsp } from 'node:fs';
import { mustParse } from '../../core/must-parse.js';
import { StewardError, truncateUtf8 } from '../../core/errors.js';
import { APP_NAME_RE, UNKNOWN_APPS_RECEIPTS } from '../../core/name-checks.js';
import { receiptsFile, type HostPaths } from '../../core/paths.js';
import {
  receiptPayloadSchema,
  receiptSeqFileSchema,
  RECEIPT_SEQ_SCHEMA_VERSION,
  receiptsFileSchema,
  RECEIPTS_FILE_SCHEMA_VERSION,
  LOG_TAIL_OUTCOMES,
  type ReceiptOutcome,
  type ReceiptPayload,
  type ReceiptsFile,
} from '../../core/receipt-schema.js';
import type { Envelope } from '../../core/release-schemas.js';
import type { Clock } from '../../platform/clock.js';
import { commitInOrder, ensureDir, prepareFileAtomic, prepareJsonAtomic } from '../../platform/fs-atomic.js';
import { DOMAINS, signEnvelope } from '../../platform/keys.js';
import { ioStep, noFaults, type Faults } from '../../platform/faults.js';
import { logger } from '../../platform/log.js';
import { lookupGroup } from '../../platform/users.js';
import { decodeStored } from './receipts-file.js';
import { readVersionedJson } from '../../platform/versioned-file.js';
import { receiptVersionFor } from '../../core/control-plane-accepts.js';
import { logTailOf } from '../../core/log-tail-text.js';
import { readTail } from '../../platform/log-tail.js';

const log = logger('helper:receipts');
// docs/design.md §2: receipts/<app>.json keeps the last 64 receipts; and, while the agent publishes a relay
// mark (core/relay-mark.ts), every receipt above it too (issue 15): a receipt leaves the file only
// once the agent has relayed it, whatever the load on helper.sock.
export const RECEIPTS_KEPT = 64;
// The most one receipts file holds: what every steward's reader takes (receiptsFileSchema). Past
// it the oldest receipts go, relayed or not, with a warning; only admin.sock gets there (below).
export const RECEIPTS_FILE_MAX = 1024;
// Unrelayed receipts of one app at which the helper mints no more receipts for attempts that
// changed nothing (refusals), and starts no attempt for helper.sock (checkRoom): a group member
// flooding helper.sock fills no more than this, and every attempt that did start can still end
// in a receipt. The rest of the file is room for the journal receipts of admin.sock's attempts.
export const UNRELAYED_MAX = 768;
// The most receipts with a log tail one receipts file holds (64 x at most 8 KiB, ~700 KiB as
// base64 payloads): past it a failed attempt's receipt goes without one.
export const LOG_TAIL_RECEIPTS_MAX = 64;
// How much of the end of a kept failed log is read to make a log tail.
const LOG_TAIL_READ_BYTES = 16 * 1024;
// docs/design.md §4: a reason message is at most 512 bytes.
const REASON_MAX_BYTES = 512;

export interface ReceiptInput {
  app: string;
  attemptId: string;
  fromVersion: string | null;
  targetVersion: string | null;
  integrity: string | null;
  outcome: ReceiptOutcome;
  startedAt: number;
  updatedAt: number;
  retryAfter?: number;
  rollbackHealthy?: boolean;
  reason?: { code: string; message: string };
  logFile?: string;
  // The attempt whose activation this one undid (docs/design.md §17): signed (payload v3) only for a
  // control plane that takes v3; its reason message names it either way.
  causeAttemptId?: string;
  // Whether this receipt is the one of the app's journal, which the helper's start looks for
  // and which retention therefore keeps (lastTransaction). Default: every outcome but `refused`;
  // false for an attempt that ended before it wrote a journal.
  ofJournal?: boolean;
}

export interface StoredReceipt {
  envelope: Envelope;
  payload: ReceiptPayload;
}

export interface ReceiptStoreOptions {
  paths: HostPaths;
  clock: Clock;
  signer: { privateKey: KeyObject; keyId: string };
  // The enrolled nodeId, or null before enrollment (see readNodeId).
  nodeId: () => Promise<string | null>;
  // group(5) file naming group `steward` (tests); default /etc/group.
  groupFile?: string;
  // The fault seam (tests): steps of the receipts and seq writes may be made to fail.
  faults?: Faults;
  // Whether `app` is in the host config. The receipts of other apps (UNKNOWN_APP refusals) all
  // go into receipts/_unknown-apps.json, trimmed like any other: requests naming made-up apps
  // make one bounded file, never one per name. Default: every app is known.
  knownApp?: (app: string) => boolean;
  // The seq up to which the agent relayed every receipt (read-relay-mark.ts), or null when no
  // agent publishes one: then only the newest RECEIPTS_KEPT are kept, as before. Default: null.
  relayedSeq?: () => Promise<number | null>;
  // The receipt payload versions the control plane accepts, as the agent last relayed them
  // (read-accepts.ts), or null when nothing was said: receipts are then v1. Default: null.
  acceptedVersions?: () => Promise<readonly number[] | null>;
  // Whether an app's rolled-back and failed receipts carry its log tail (host config `logTail`,
  // docs/design.md §12). Default: no app's do.
  logTail?: (app: string) => boolean;
}

interface AppReceipts {
  file: ReceiptsFile;
  stored: StoredReceipt[];
}

// One host-wide lock per root: one helper per root holds helper.lock, so an
// in-process chain is enough to allocate seqs and make receipts durable in order.
const hostLocks = new Map<string, Promise<void>>();

function withHostLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const run = (hostLocks.get(key) ?? Promise.resolve()).then(fn);
  const tail = run.then(() => undefined, () => undefined);
  hostLocks.set(key, tail);
  void tail.then(() => {
    if (hostLocks.get(key) === tail) hostLocks.delete(key);
  });
  return run;
}

// The helper's signed receipts (docs/design.md §6): seqs are allocated and receipts made durable
// under one lock, in order, never reused. emit is idempotent per (app, attemptId).
export class ReceiptStore {
  readonly keyId: string;
  private readonly opts: ReceiptStoreOptions;
  private next: number | null = null;
  // Per app: the receipts file as last read or written, and the identity of that file.
  private readonly parsed = new Map<string, { id: string; value: AppReceipts }>();
  private group: Promise<number | null> | null = null;
  // Hears every receipt once it is durable (the metrics textfile counts them).
  onEmitted: ((payload: ReceiptPayload) => void) | undefined;

  constructor(opts: ReceiptStoreOptions) {
    this.opts = opts;
    this.keyId = opts.signer.keyId;
  }

  // Signs and stores the receipt of an attempt's terminal outcome; when that attempt
  // already has a receipt, returns it and writes nothing.
  emit(input: ReceiptInput): Promise<StoredReceipt> {
    return withHostLock(this.opts.paths.varLib, () => this.emitLocked(input));
  }

  // The receipt of one attempt, or null.
  async find(app: string, attemptId: string): Promise<StoredReceipt | null> {
    return (await this.readApp(this.fileKey(app)))?.stored.find((r) => isOf(r, app, attemptId)) ?? null;
  }

  // Throws RECEIPTS_UNRELAYED when `app` has UNRELAYED_MAX receipts the agent has not relayed:
  // helper.sock then starts no attempt of it, since every attempt must be able to end in a
  // receipt. Reads only; nothing to do without a relay mark.
  async checkRoom(app: string): Promise<void> {
    const relayed = await this.relayedSeq();
    if (relayed === null) return;
    const waiting = unrelayedOf((await this.readApp(this.fileKey(app)))?.stored ?? [], relayed);
    if (waiting.length >= UNRELAYED_MAX) throw backlogError(app, waiting);
  }

  // The stored receipts of one app, or of every app, sorted by seq. Read under the host-wide
  // lock: seqs are host-wide and every emit writes one app's file, so a listing read while an
  // emit runs could show seq N+1 (one app) without N (another); a reader that keeps only seqs
  // above the highest it has seen (the agent's outbox) would then skip N forever.
  list(app?: string): Promise<StoredReceipt[]> {
    return withHostLock(this.opts.paths.varLib, async () => {
      const keys = app === undefined ? await this.storedApps() : [this.fileKey(app)];
      const out: StoredReceipt[] = [];
      for (const k of keys) {
        for (const r of (await this.readApp(k))?.stored ?? []) if (app === undefined || r.payload.app === app) out.push(r);
      }
      return out.sort((x, y) => x.payload.seq - y.payload.seq);
    });
  }

  // The receipts file an app's receipts live in: its own, or the one unknown apps share.
  private fileKey(app: string): string {
    return (this.opts.knownApp?.(app) ?? true) ? app : UNKNOWN_APPS_RECEIPTS;
  }

  private async emitLocked(input: ReceiptInput): Promise<StoredReceipt> {
    const { paths } = this.opts;
    const key = this.fileKey(input.app);
    const file = receiptsFile(paths, key);
    // An unreadable receipts file throws here: it is never written over.
    const current = await this.readApp(key);
    const existing = current?.stored.find((r) => isOf(r, input.app, input.attemptId));
    if (existing) {
      log('receipt exists app=%s attemptId=%s seq=%d', input.app, input.attemptId, existing.payload.seq);
      return existing;
    }
    const relayed = await this.relayedSeq();
    const ofJournal = input.ofJournal ?? input.outcome !== 'refused';
    // An attempt that ended before its journal changed nothing: past the unrelayed cap it gets no
    // receipt (the caller is told so), which keeps a flood of refusals (or of requests that fail
    // before their journal) from filling the disk or pushing out what is unrelayed.
    if (relayed !== null && !ofJournal) {
      const waiting = unrelayedOf(current?.stored ?? [], relayed);
      if (waiting.length >= UNRELAYED_MAX) throw backlogError(input.app, waiting);
    }
    const seq = await this.allocate(input.app);
    const logTail = await this.logTailFor(input, current?.stored ?? []);
    const accepted = input.causeAttemptId !== undefined || logTail !== undefined ? ((await this.opts.acceptedVersions?.()) ?? null) : null;
    const cause = input.causeAttemptId !== undefined && receiptVersionFor(accepted) >= 3 ? input.causeAttemptId : undefined;
    // The lowest version the control plane takes that holds what this receipt carries (v3 holds
    // v2's logTail too).
    const v = cause !== undefined ? 3 : logTail !== undefined ? (accepted?.includes(2) ? 2 : 3) : 1;
    const payload = this.buildPayload(input, seq, await this.opts.nodeId(), v, logTail, cause);
    const envelope = signEnvelope(DOMAINS.receipt, payload, this.opts.signer.privateKey);
    const lastTransaction = ofJournal ? { attemptId: input.attemptId, seq } : (current?.file.lastTransaction ?? null);
    // A mark above every seq signed so far is bounded to them: the receipts still to come are unrelayed.
    const { kept, dropped } = trimReceipts([...(current?.stored ?? []), { envelope, payload }], lastTransaction, relayed === null ? null : Math.min(relayed, seq - 1));
    const lost = relayed === null ? [] : unrelayedOf(dropped, relayed);
    if (lost.length > 0) {
      log('WARNING: receipts of %s not yet relayed by steward-agent dropped to keep %s at %d receipts: seqs=%s', input.app, file, RECEIPTS_FILE_MAX, lost.map((r) => r.payload.seq).join(','));
    }
    const body: ReceiptsFile = { schemaVersion: RECEIPTS_FILE_SCHEMA_VERSION, app: key, lastTransaction, receipts: kept.map((r) => r.envelope) };
    // From here the seq counts as used, even if a write below fails: a receipts file
    // renamed into place but not yet fsynced may already have been read by the agent.
    this.next = seq + 1;
    const gid = await this.stewardGid();
    await ensureDir(paths.stateDir, 0o700);
    await ensureDir(paths.receiptsDir, 0o750);
    if (gid !== null) await setDirGroup(paths.receiptsDir, gid);
    // Order matters: the receipts file first, then the seq. A crash between the two leaves
    // a seq file behind the receipts, and allocate() takes the higher of the two.
    // The seq file's temp file is written and fsynced while the receipts file's rename and
    // folder fsync run (see prepareFileAtomic); it is renamed only after them.
    const step = ioStep(this.opts.faults ?? noFaults, 'receipt');
    await commitInOrder(
      prepareFileAtomic(file, JSON.stringify(body, null, 2) + '\n', 0o640, { gid, step }),
      prepareJsonAtomic(paths.receiptSeq, { schemaVersion: RECEIPT_SEQ_SCHEMA_VERSION, next: seq + 1 }, 0o600, step),
      () => {
        // What was just made durable is what the next emit would read back.
        const id = fileIdentity(file);
        if (id !== null) this.parsed.set(key, { id, value: { file: body, stored: kept } });
      },
    );
    log('receipt app=%s attemptId=%s seq=%d outcome=%s', input.app, input.attemptId, seq, input.outcome);
    this.onEmitted?.(payload);
    return { envelope, payload };
  }

  // The log tail this receipt carries, or undefined: only a rolled-back or failed receipt with a
  // kept log file, for an app whose config allows it, to a control plane that accepts payload v2;
  // and at most LOG_TAIL_RECEIPTS_MAX of them in one receipts file, so that a run of failures
  // keeps the file within what every reader takes (4 MiB). Reading the file is best effort.
  private async logTailFor(input: ReceiptInput, stored: readonly StoredReceipt[]): Promise<string | undefined> {
    if (!LOG_TAIL_OUTCOMES.includes(input.outcome) || input.logFile === undefined || !(this.opts.logTail?.(input.app) ?? false)) return undefined;
    if (receiptVersionFor((await this.opts.acceptedVersions?.()) ?? null) < 2) return undefined;
    if (stored.filter((r) => r.payload.logTail !== undefined).length >= LOG_TAIL_RECEIPTS_MAX) {
      log('receipt app=%s attemptId=%s goes without its log tail: %d receipts of the file carry one', input.app, input.attemptId, LOG_TAIL_RECEIPTS_MAX);
      return undefined;
    }
    try {
      return logTailOf(await readTail(input.logFile, LOG_TAIL_READ_BYTES));
    } catch (err) {
      log('receipt app=%s attemptId=%s goes without its log tail: %s', input.app, input.attemptId, (err as Error).message);
      return undefined;
    }
  }

  private buildPayload(input: ReceiptInput, seq: number, nodeId: string | null, v: 1 | 2 | 3, logTail?: string, causeAttemptId?: string): ReceiptPayload {
    const candidate = {
      v,
      nodeId,
      app: input.app,
      attemptId: input.attemptId,
      seq,
      fromVersion: input.fromVersion,
      targetVersion: input.targetVersion,
      integrity: input.integrity,
      outcome: input.outcome,
      startedAt: input.startedAt,
      updatedAt: input.updatedAt,
      ...(input.retryAfter !== undefined ? { retryAfter: input.retryAfter } : {}),
      ...(input.rollbackHealthy !== undefined ? { rollbackHealthy: input.rollbackHealthy } : {}),
      ...(input.reason ? { reason: { code: input.reason.code, message: truncateUtf8(input.reason.message, REASON_MAX_BYTES) } } : {}),
      ...(input.logFile !== undefined ? { logFile: input.logFile } : {}),
      ...(logTail !== undefined ? { logTail } : {}),
      ...(causeAttemptId !== undefined ? { causeAttemptId } : {}),
    };
    return mustParse(receiptPayloadSchema, candidate, 'INTERNAL', `receipt for ${input.app} attempt ${input.attemptId} is invalid`);
  }

  // next = max(receipt-seq.json's next, 1 + the highest seq in any receipts file),
  // computed once per process; afterwards this store is the only writer.
  private async allocate(app: string): Promise<number> {
    if (this.next === null) {
      const { paths } = this.opts;
      const seqFile = await readVersionedJson(paths.receiptSeq, RECEIPT_SEQ_SCHEMA_VERSION, receiptSeqFileSchema, 64 * 1024);
      let highest = 0;
      for (const a of await this.storedApps()) {
        try {
          for (const r of (await this.readApp(a))?.stored ?? []) highest = Math.max(highest, r.payload.seq);
        } catch (err) {
          // Another app's unreadable file must not stop this app's receipts; receipt-seq.json
          // already covers every seq except one lost between two writes of that very file.
          if (a === this.fileKey(app)) throw err;
          log('seq scan skips %s: %s', receiptsFile(paths, a), (err as Error).message);
        }
      }
      this.next = Math.max(seqFile?.next ?? 1, highest + 1);
      log('receipt seq starts at %d (seq file %s, highest stored %d)', this.next, seqFile?.next ?? 'absent', highest);
    }
    return this.next;
  }

  // An app's receipts file (or the one of the unknown apps, by its key), parsed and checked;
  // the result is kept while the file on disk is the same (same inode, size, mtime and ctime),
  // since parsing 64 receipts and their payloads was most of an emit's CPU time. The file is
  // only ever replaced by a rename (a new inode).
  private async readApp(app: string): Promise<AppReceipts | null> {
    const file = receiptsFile(this.opts.paths, app);
    // Taken before the read: if the file changes in between, the next read sees another id.
    const id = fileIdentity(file);
    const cached = this.parsed.get(app);
    if (id !== null && cached?.id === id) return cached.value;
    this.parsed.delete(app);
    const data = await readVersionedJson(file, RECEIPTS_FILE_SCHEMA_VERSION, receiptsFileSchema);
    if (!data) return null;
    if (data.app !== app) throw new StewardError('STATE_INVALID', `${file}: holds receipts of app ${data.app}`);
    const stored: StoredReceipt[] = [];
    for (const envelope of data.receipts) stored.push({ envelope, payload: await decodeStored(file, envelope) });
    if (app !== UNKNOWN_APPS_RECEIPTS && stored.some((r) => r.payload.app !== app)) throw new StewardError('STATE_INVALID', `${file}: holds a receipt of another app`);
    const value = { file: data, stored };
    if (id !== null) this.parsed.set(app, { id, value });
    return value;
  }

  private async storedApps(): Promise<string[]> {
    let names: string[];
    try {
      names = await fsp.readdir(this.opts.paths.receiptsDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const keys = names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5));
    return keys.filter((k) => APP_NAME_RE.test(k) || k === UNKNOWN_APPS_RECEIPTS).sort();
  }

  private relayedSeq(): Promise<number | null> {
    return this.opts.relayedSeq?.() ?? Promise.resolve(null);
  }

  // As root, receipts are readable by group `steward` (the agent); otherwise left as created.
  private stewardGid(): Promise<number | null> {
    if (process.geteuid?.() !== 0) return Promise.resolve(null);
    this.group ??= lookupGroup('steward', this.opts.groupFile).then((g) => g?.gid ?? null);
    return this.group;
  }
}

// Whether a stored receipt is the one of `attemptId` of `app` (the unknown apps' file holds several apps).
function isOf(r: StoredReceipt, app: string, attemptId: string): boolean {
  return r.payload.attemptId === attemptId && r.payload.app === app;
}

// Keeps, oldest first: the receipt named by lastTransaction however old (the helper's start looks
// for it), the newest RECEIPTS_KEPT others and, when `relayedSeq` is not null, every receipt above
// it (not yet relayed by the agent); at most RECEIPTS_FILE_MAX, the oldest others going first.
// `stored` is in seq order; `dropped` is what is not kept.
export function trimReceipts(
  stored: StoredReceipt[],
  lastTransaction: { attemptId: string; seq: number } | null,
  relayedSeq: number | null = null,
): { kept: StoredReceipt[]; dropped: StoredReceipt[] } {
  const pinned = (r: StoredReceipt) => lastTransaction !== null && r.payload.seq === lastTransaction.seq && r.payload.attemptId === lastTransaction.attemptId;
  const hasPin = stored.some(pinned);
  const others = stored.filter((r) => !pinned(r));
  const newest = new Set(others.slice(-(hasPin ? RECEIPTS_KEPT - 1 : RECEIPTS_KEPT)));
  const wanted = others.filter((r) => newest.has(r) || (relayedSeq !== null && r.payload.seq > relayedSeq));
  const room = RECEIPTS_FILE_MAX - (hasPin ? 1 : 0);
  const keep = new Set([...stored.filter(pinned), ...wanted.slice(Math.max(0, wanted.length - room))]);
  return { kept: stored.filter((r) => keep.has(r)), dropped: stored.filter((r) => !keep.has(r)) };
}

// The receipts above `relayedSeq`: not yet relayed by the agent.
function unrelayedOf(stored: readonly StoredReceipt[], relayedSeq: number): StoredReceipt[] {
  return stored.filter((r) => r.payload.seq > relayedSeq);
}

function backlogError(app: string, waiting: readonly StoredReceipt[]): StewardError {
  const seqs = waiting.map((r) => r.payload.seq);
  return new StewardError(
    'RECEIPTS_UNRELAYED',
    `${app}: ${waiting.length} receipts (seqs ${seqs[0]} to ${seqs[seqs.length - 1]}) wait for steward-agent to relay them, and at most ${UNRELAYED_MAX} may wait per app: refused without a receipt, nothing changed (is steward-agent running, and its control plane acknowledging?)`,
  );
}

// dev, inode, size, mtime and ctime (in ns) of `file`, or null when it cannot be lstat'ed.
function fileIdentity(file: string): string | null {
  try {
    const st = lstatSync(file, { bigint: true });
    return st.isFile() ? `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : null;
  } catch {
    return null;
  }
}

// Gives the receipts folder to group `steward` through an O_NOFOLLOW fd, never by path.
async function setDirGroup(dir: string, gid: number): Promise<void> {
  const fh = await fsp.open(dir, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW);
  try {
    const st = await fh.stat();
    if (st.gid !== gid) await fh.chown(st.uid, gid);
  } finally {
    await fh.close();
  }
}
