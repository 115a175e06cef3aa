// Group commit of heartbeats. A commit must be on disk before its heartbeats are answered, and
// that fsync costs more than all the rest of a heartbeat. So the heartbeats that arrive together
// are recorded in one BEGIN IMMEDIATE transaction, each in its own savepoint, and all are
// answered once that commit has returned and is durable (`durable`: in the server, an fdatasync
// of the WAL in the thread pool, store/commit-sync.ts, shared by every commit made before it
// started; by default the commit itself, a store with synchronous=FULL): nothing is acknowledged
// before it is on disk.
//
// Each heartbeat keeps the meaning it has alone: it is checked against the store as the earlier
// heartbeats of its batch left it (two of one node behave as if sent one after the other), a
// rejected one rolls back to its savepoint and changes nothing (one refused for clock skew then
// records that on its node, accept-heartbeat.ts's recordSkewRefusal). A commit that stored verdicts
// wakes the rollout ticker of every instance (rollouts/rollout-ticker.ts).
// When the commit fails, every heartbeat of the batch fails with that error and none is recorded.
//
// Batching adds no wait when idle: the first heartbeat is committed on the event loop's next
// turn (setImmediate) after its signature check (in the thread pool) ended, with the bodies
// submitted before that turn once their checks end too; those that arrive while a commit runs
// (with SQLite it blocks the loop; better-sqlite3 is synchronous) are read on the turn after it
// and share the next commit.
// A commit does not wait for the fsync of the one before: the loop goes on reading, verifying
// and committing while the fsync runs, and the next fsync covers all of that.
import type { HeartbeatPayload } from '../../core/heartbeat-schema.js';
import type { ReceiptPayload } from '../../core/receipt-schema.js';
import { logger } from '../../platform/log.js';
import type { Answer } from '../server/answer.js';
import { readTrustState } from '../trust/heartbeat-trust.js';
import { TransactionAbortedError, type ControlStore, type StoreTx } from '../store/store.js';
import type { StopPoints } from '../server/test-stop-points.js';
import { openHeartbeatBody, recordOpenedHeartbeat, recordSkewRefusal, type OpenedHeartbeatBody, type SkewRefused } from './accept-heartbeat.js';

const log = logger('control:heartbeat');

// At most this many heartbeats in one transaction, so the write lock (which CLI commands and
// enrollments wait for) is held for a few milliseconds, not for a whole backlog.
export const MAX_HEARTBEAT_BATCH = 64;

// Test seams; all but afterOpen run inside the batch's write transaction.
export interface GroupCommitHooks {
  // After a body's signature check ended well, before it joins the queue (a test delays one to
  // end the checks in another order than the bodies came).
  afterOpen?: (heartbeat: HeartbeatPayload) => void | Promise<void>;
  // After one heartbeat's writes, before its savepoint is released. A throw fails that
  // heartbeat alone: its savepoint rolls back and its request gets the error.
  afterRecord?: (nodeId: string) => void;
  // After every heartbeat of the batch, just before COMMIT. A throw, or a write that makes the
  // COMMIT fail, fails the whole batch as a failing commit does.
  beforeCommit?: (tx: StoreTx) => void | Promise<void>;
}

export interface HeartbeatBatcher {
  // Verifies and records one heartbeat body. Resolves with its answer once the commit holding
  // it has returned (a rejection found before the transaction at once: it changes nothing);
  // rejects with the error when its own savepoint or its batch's commit fails.
  submit(body: Buffer): Promise<Answer>;
  // Commits made so far, and the heartbeats they held (accepted or rejected).
  stats(): { commits: number; heartbeats: number };
}

export interface HeartbeatBatcherOptions {
  store: ControlStore;
  heartbeatSeconds: number;
  maxBatch?: number;
  hooks?: GroupCommitHooks;
  // Resolves once every commit made before the call is on disk. Default: the store's durable().
  durable?: () => Promise<void>;
  // Test only: where this process stops itself (test-stop-points.ts).
  stopAt?: StopPoints;
  // Called after a commit that stored receipts, with them (the metrics count them).
  onReceiptsStored?: (receipts: ReceiptPayload[]) => void;
}

interface Pending {
  opened: OpenedHeartbeatBody;
  resolve: (a: Answer) => void;
  reject: (err: unknown) => void;
}

type Outcome = { answer: Answer } | { error: unknown };

// Thrown out of a savepoint to roll back a rejected heartbeat (it wrote nothing; the savepoint
// makes sure of it).
class Rejected {
  constructor(
    readonly answer: Answer,
    readonly skewRefused: SkewRefused | null,
  ) {}
}

export function createHeartbeatBatcher(opts: HeartbeatBatcherOptions): HeartbeatBatcher {
  const { store, heartbeatSeconds } = opts;
  const maxBatch = opts.maxBatch ?? MAX_HEARTBEAT_BATCH;
  const hooks = opts.hooks ?? {};
  const durable = opts.durable ?? (() => store.durable());
  const queue: Pending[] = [];
  let scheduled = false;
  let commits = 0;
  let heartbeats = 0;

  // `batch.verdicts` counts the counting receipts the batch's heartbeats stored; `batch.receipts` holds them all.
  const recordOne = async (tx: StoreTx, p: Pending, batch: { verdicts: number; receipts: ReceiptPayload[] }): Promise<Outcome> => {
    try {
      return {
        answer: await tx.savepoint(async () => {
          const { answer, counted, stored, skewRefused } = await recordOpenedHeartbeat(tx, store, p.opened, heartbeatSeconds);
          if (answer.status !== 200) throw new Rejected(answer, skewRefused);
          hooks.afterRecord?.(p.opened.heartbeat.nodeId);
          batch.verdicts += counted;
          batch.receipts.push(...stored);
          return answer;
        }),
      };
    } catch (err) {
      if (err instanceof Rejected) {
        if (err.skewRefused) await recordRefusal(tx, err.skewRefused);
        return { answer: err.answer };
      }
      // Nothing of this batch can commit any more: it fails as a failed commit does.
      if (err instanceof TransactionAbortedError) throw err.original;
      log('heartbeat of node=%s failed and was rolled back alone: %s', p.opened.heartbeat.nodeId, (err as Error)?.message ?? String(err));
      return { error: err };
    }
  };

  // In a savepoint of its own: a refusal that cannot be recorded is logged, and the heartbeat is
  // answered its 422 all the same.
  const recordRefusal = async (tx: StoreTx, r: SkewRefused): Promise<void> => {
    try {
      await tx.savepoint(() => recordSkewRefusal(tx, r));
    } catch (err) {
      // Nothing of this batch can commit any more: it fails as a failed commit does.
      if (err instanceof TransactionAbortedError) throw err.original;
      log('clock skew refusal of node=%s not recorded: %s', r.nodeId, (err as Error)?.message ?? String(err));
    }
  };

  const flush = async () => {
    scheduled = false;
    const batch = queue.splice(0, maxBatch);
    if (queue.length > 0) schedule();
    let outcomes: Outcome[];
    const stored = { verdicts: 0, receipts: [] as ReceiptPayload[] };
    try {
      outcomes = await store.write(async (tx) => {
        const out: Outcome[] = [];
        for (const p of batch) out.push(await recordOne(tx, p, stored));
        // Once per commit, for the answers of agents that read `trust` or `directive` (trust/heartbeat-trust.ts).
        const trust = await readTrustState(tx);
        for (const o of out) if ('answer' in o && o.answer.status === 200) o.answer = { ...o.answer, trust };
        // A verdict is acted on at once: every instance's rollout ticker wakes at this COMMIT.
        if (stored.verdicts > 0) {
          await tx.wakeRollouts();
          opts.stopAt?.('heartbeat-before-commit');
        }
        await hooks.beforeCommit?.(tx);
        return out;
      });
    } catch (err) {
      log('commit of %d heartbeats failed, none recorded: %s', batch.length, (err as Error)?.message ?? String(err));
      for (const p of batch) p.reject(err);
      return;
    }
    commits++;
    heartbeats += batch.length;
    if (stored.receipts.length > 0) opts.onReceiptsStored?.(stored.receipts);
    // Why every member waits, the rejected ones too: a rejection's answer may rest on what the
    // batch's earlier heartbeats wrote (a SEQ_REPLAYED after an accepted seq of the same node).
    durable().then(
      () =>
        batch.forEach((p, i) => {
          const o = outcomes[i]!;
          if ('answer' in o) p.resolve(o.answer);
          else p.reject(o.error);
        }),
      (err: unknown) => {
        log('commit of %d heartbeats is not known to be on disk, none answered 200: %s', batch.length, (err as Error)?.message ?? String(err));
        for (const p of batch) p.reject(err);
      },
    );
  };

  // Heartbeats join the queue in the order their bodies were submitted, whatever order their
  // signature checks (in the thread pool, several at once) end in: two of one node sent one after
  // the other are recorded in that order. Each submit takes a ticket; an opened body waits in
  // `opened` until every earlier ticket was settled (queued, or answered with a rejection).
  let nextTicket = 0;
  let nextInLine = 0;
  const opened = new Map<number, Pending | null>();
  // When set, the batch waits for the checks of every body submitted before this ticket.
  let flushAt: number | null = null;
  const settle = (ticket: number, p: Pending | null): void => {
    opened.set(ticket, p);
    for (let q = opened.get(nextInLine); q !== undefined; q = opened.get(nextInLine)) {
      opened.delete(nextInLine++);
      if (q === null) continue;
      queue.push(q);
      schedule();
    }
    if (flushAt !== null && nextInLine >= flushAt) {
      flushAt = null;
      void flush();
    }
  };

  // On the loop's next turn, the batch takes what is queued then, once the bodies submitted
  // before that turn have been checked too (they are in the thread pool: a wait of one signature
  // check, never for a body that arrives later). So bodies submitted together share a commit.
  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      if (nextInLine >= nextTicket) void flush();
      else flushAt = nextTicket;
    });
  }

  return {
    async submit(body) {
      const ticket = nextTicket++;
      let checked: Awaited<ReturnType<typeof openHeartbeatBody>>;
      try {
        checked = await openHeartbeatBody(store, body);
        if (checked.ok) await hooks.afterOpen?.(checked.heartbeat);
      } catch (err) {
        settle(ticket, null);
        throw err;
      }
      if (!checked.ok) {
        settle(ticket, null);
        return checked.answer;
      }
      const ok = checked;
      return new Promise<Answer>((resolve, reject) => settle(ticket, { opened: ok, resolve, reject }));
    },
    stats: () => ({ commits, heartbeats }),
  };
}
