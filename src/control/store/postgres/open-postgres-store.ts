// The PostgreSQL implementation of the store contract (../store.ts), on `pg` and its pool
// (docs/design.md §13). Several processes and instances may use one database at once:
// - this process's writes run one after the other, as on SQLite (so the contract's "never
//   interleave" holds for every caller in it), each in a SERIALIZABLE transaction, which keeps
//   them correct against the writes of other processes;
// - a serialization failure or a deadlock (40001, 40P01: another instance wrote the same rows)
//   rolls the transaction back and runs it again, a few times with a growing random pause,
//   then fails with BUSY naming the error;
// - a read waits for the writes this process asked for before it, then runs beside the later
//   ones over one snapshot (REPEATABLE READ, READ ONLY) on a connection of its own.
// The store's clock is the database's: transaction_timestamp(), fixed for the whole
// transaction (an injected clock replaces it in tests). The schema must be within this
// steward-control's range (schema.ts); `migrate` changes it, never the opening of a store.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { StewardError } from '../../../core/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { logger } from '../../../platform/log.js';
import { TransactionAbortedError, type ControlStore, type StoreTx } from '../store.js';
import { pgAudit } from './audit.js';
import { pgAuthFailures } from './auth-failures.js';
import { INT8_OID, parseInt8 } from './int8.js';
import { checkSchemaState, migratePostgres, readSchemaState, type MigrateResult } from './migrate.js';
import { pgNodes } from './nodes.js';
import { pgOperators } from './operators.js';
import type { Param, Query } from './query.js';
import { pgReceipts } from './receipts.js';
import { pgReleases } from './releases.js';
import { pgRuns } from './runs.js';
import { pgPins } from './pins.js';
import { pgSignals } from './signals.js';
import { pgTrust } from './trust.js';
import { pgTargets } from './targets.js';
import { pgHooks } from './hooks.js';
import { pgSessions } from './sessions.js';
import { pgSettings } from './settings.js';
import { pgTokens } from './tokens.js';
import { redactUrl } from './url.js';

export { isPostgresUrl, redactUrl } from './url.js';

const log = logger('control:store');

// How often a transaction is tried before a serialization failure is the caller's.
export const MAX_TRIES = 8;
const RETRYABLE = new Set(['40001', '40P01']);

export interface PgStoreOptions {
  // Test seam: the store's clock instead of the database's transaction_timestamp().
  clock?: Pick<Clock, 'now'>;
  // Connections in the pool (default 10).
  maxConnections?: number;
}

function newPool(url: string, max: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types: { getTypeParser: ((oid: number, format?: 'text' | 'binary') => (oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format ?? 'text'))) as typeof pg.types.getTypeParser },
  });
  // Why: an idle connection that the server drops emits 'error' on the pool; unhandled, it
  // would end the process. The next query gets a fresh connection.
  pool.on('error', (err) => log('an idle database connection failed: %s', err.message));
  return pool;
}

// The store's tables over one connection (the store's own transaction, or a restore's).
export function pgFamilies(q: Query): Omit<StoreTx, 'now' | 'savepoint' | 'wakeRollouts' | 'wakeNodes'> {
  return {
    nodes: pgNodes(q),
    receipts: pgReceipts(q),
    runs: pgRuns(q),
    releases: pgReleases(q),
    tokens: pgTokens(q),
    settings: pgSettings(q),
    operators: pgOperators(q),
    sessions: pgSessions(q),
    authFailures: pgAuthFailures(q),
    audit: pgAudit(q),
    targets: pgTargets(q),
    pins: pgPins(q),
    hooks: pgHooks(q),
    signals: pgSignals(q),
    trust: pgTrust(q),
  };
}

// One connection of its own to `url` (64-bit integers as numbers); `end` closes it (a broken
// one is thrown away).
export async function openPgClient(url: string): Promise<{ client: pg.PoolClient; end(broken?: Error): Promise<void> }> {
  const pool = newPool(url, 1);
  let client: pg.PoolClient;
  try {
    client = await connect(pool, redactUrl(url));
  } catch (err) {
    await pool.end();
    throw err;
  }
  let ended: Promise<void> | null = null;
  return {
    client,
    end: (broken) =>
      (ended ??= (async () => {
        client.release(broken);
        await pool.end();
      })()),
  };
}

async function connect(pool: pg.Pool, location: string): Promise<pg.PoolClient> {
  try {
    return await pool.connect();
  } catch (err) {
    throw new StewardError('IO_ERROR', `cannot connect to the control plane database ${location}: ${(err as Error).message}`, { cause: err });
  }
}

// `steward-control migrate` (and `init`) on the database at `url`.
export async function migratePostgresAt(url: string): Promise<MigrateResult> {
  const c = await openPgClient(url);
  try {
    return await migratePostgres(c.client, redactUrl(url));
  } finally {
    await c.end();
  }
}

// Opens the store at `url` after checking that its schema is within this steward-control's range.
export async function openPostgresStore(url: string, opts: PgStoreOptions = {}): Promise<ControlStore> {
  const location = redactUrl(url);
  const pool = newPool(url, opts.maxConnections ?? 10);
  try {
    const client = await connect(pool, location);
    try {
      checkSchemaState(await readSchemaState(client), location);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end();
    throw err;
  }

  const wakes = listenForWakes(url, location);
  const runOnce = async <T>(begin: string, fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
    const client = await connect(pool, location);
    wakes.own(client);
    // The first error of a statement not undone by a savepoint: PostgreSQL has then aborted the
    // transaction, and its COMMIT would roll back without a word.
    let failed: unknown = null;
    let broken: Error | undefined;
    const run = async (sql: string, args: Param[] = []) => {
      try {
        return await client.query(sql, args);
      } catch (err) {
        failed ??= err;
        // Anything but the server's answer (a lost connection, a value the parsers refused)
        // leaves the connection in a state nobody should reuse.
        if (!(err instanceof pg.DatabaseError)) broken = err as Error;
        throw err;
      }
    };
    let savepoints = 0;
    const undoable = async <T>(fn: () => Promise<T>, wrap: (err: unknown) => unknown): Promise<T> => {
      const name = `sp${++savepoints}`;
      const before = failed;
      await run(`SAVEPOINT ${name}`);
      try {
        const r = await fn();
        await run(`RELEASE SAVEPOINT ${name}`);
        return r;
      } catch (err) {
        // A serialization failure or a broken connection ends the whole transaction.
        if (broken || RETRYABLE.has((failed as { code?: string } | null)?.code ?? '')) throw wrap(failed ?? err);
        failed = before;
        await run(`ROLLBACK TO SAVEPOINT ${name}`);
        await run(`RELEASE SAVEPOINT ${name}`);
        throw err;
      }
    };
    const q: Query = {
      rows: async (sql, args) => (await run(sql, args)).rows,
      one: async (sql, args) => (await run(sql, args)).rows[0] ?? null,
      count: async (sql, args) => (await run(sql, args)).rowCount ?? 0,
      guarded: (fn) => undoable(fn, (e) => e),
    };
    try {
      await run(begin);
      let at: Promise<number> | null = opts.clock ? Promise.resolve(opts.clock.now()) : null;
      let woke: Promise<unknown> | null = null;
      const woken = new Set<string>();
      const tx: StoreTx = {
        now: () => (at ??= q.one<{ now: number }>('SELECT floor(extract(epoch FROM transaction_timestamp()) * 1000)::bigint AS now').then((r) => (r as { now: number }).now)),
        ...pgFamilies(q),
        savepoint: (fn) => undoable(fn, (e) => new TransactionAbortedError(e)),
        // PostgreSQL delivers a NOTIFY at COMMIT, to every listening session (this one's too), and never after a rollback.
        wakeRollouts: async () => void (await (woke ??= q.one(`SELECT pg_notify('${ROLLOUT_CHANNEL}', '')`))),
        wakeNodes: async (ids) => {
          for (const id of ids) woken.add(id);
        },
      };
      const r = await fn(tx);
      if (failed) throw failed;
      // Why here, after fn: the NOTIFYs are sent once, outside any savepoint fn may roll back.
      const nodes = [...woken];
      for (const payload of nodePayloads(nodes)) await run('SELECT pg_notify($1, $2)', [NODE_CHANNEL, payload]);
      const done = await run('COMMIT');
      if (done.command !== 'COMMIT') throw new StewardError('IO_ERROR', `the transaction on ${location} was rolled back by the database at COMMIT`);
      if (woke) wakes.wakeHere();
      if (nodes.length > 0) wakes.wakeNodesHere(nodes);
      return r;
    } catch (err) {
      if (!broken) await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw err;
    } finally {
      client.release(broken);
    }
  };

  const inTransaction = async <T>(begin: string, fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await runOnce(begin, fn);
      } catch (err) {
        const code = retryableCode(err);
        if (!code) throw err;
        if (attempt >= MAX_TRIES) {
          throw new StewardError('BUSY', `the control plane database ${location} refused the transaction ${MAX_TRIES} times (${code}: ${(cause(err) as Error).message}); other instances are writing the same rows: try again`, { cause: err });
        }
        log('transaction on %s tried again after %s (try %d of %d)', location, code, attempt + 1, MAX_TRIES);
        await sleep(Math.random() * 5 * 2 ** attempt);
      }
    }
  };

  let tail: Promise<unknown> = Promise.resolve();
  const reading = new Set<Promise<unknown>>();
  let closed: Promise<void> | null = null;
  return {
    location,
    write: (fn) => {
      const result = tail.then(() => inTransaction('BEGIN ISOLATION LEVEL SERIALIZABLE', fn));
      tail = result.catch(() => undefined);
      return result;
    },
    read: (fn) => {
      const result = tail.then(() => inTransaction('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', fn));
      const settled = result.catch(() => undefined);
      reading.add(settled);
      void settled.then(() => reading.delete(settled));
      return result;
    },
    // A COMMIT that returned is on disk (synchronous_commit on, PostgreSQL's default).
    durable: () => Promise.resolve(),
    onRolloutWake: wakes.add,
    onNodeWake: wakes.addNodes,
    close: () => (closed ??= tail.then(() => Promise.all(reading)).then(() => Promise.all([wakes.close(), pool.end()])).then(() => undefined)),
  };
}

// The NOTIFY channels of tx.wakeRollouts() and tx.wakeNodes().
const ROLLOUT_CHANNEL = 'steward_rollouts';
const NODE_CHANNEL = 'steward_nodes';
// A NOTIFY payload is under 8000 bytes: the nodeIds of a commit go comma-separated, several
// payloads when they are more.
const MAX_NODE_PAYLOAD = 7000;
const NODE_ID_RE = /^n-[0-9a-f]{1,64}$/;

// The payloads that carry `ids`, each under MAX_NODE_PAYLOAD bytes.
export function nodePayloads(ids: readonly string[]): string[] {
  const out: string[] = [];
  let cur = '';
  for (const id of ids) {
    if (cur.length > 0 && cur.length + 1 + id.length > MAX_NODE_PAYLOAD) {
      out.push(cur);
      cur = '';
    }
    cur = cur.length > 0 ? `${cur},${id}` : id;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

// The nodeIds of a payload another instance sent: anything that is not a nodeId is dropped (the
// database's bytes are not trusted further than that).
export function nodeIdsOfPayload(payload: string | undefined): string[] {
  return (payload ?? '').split(',').filter((id) => NODE_ID_RE.test(id));
}

// The wakes of tx.wakeRollouts() and tx.wakeNodes(): this process's listeners are called at once
// after its own COMMIT; other processes' come through LISTEN on both channels, on a connection of
// its own opened with the first listener and opened again a second after it fails (the wakes
// meanwhile are lost; the ticker's timer, and each node's next heartbeat, stand behind them). A
// notification sent from one of this store's own connections (by its backend's pid) was acted on
// already and is not passed on.
function listenForWakes(url: string, location: string) {
  const listeners = new Set<() => void>();
  const nodeListeners = new Set<(nodeIds: readonly string[]) => void>();
  const ownPids = new Set<number>();
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;
  let closed = false;
  // Why on the next turn: a listener's failure is not the committed transaction's.
  const wakeHere = () => {
    for (const l of listeners) queueMicrotask(l);
  };
  const wakeNodesHere = (ids: readonly string[]) => {
    for (const l of nodeListeners) queueMicrotask(() => l(ids));
  };
  const open = () => {
    retry = null;
    if (closed) return;
    const c = new pg.Client({ connectionString: url });
    client = c;
    const fail = (err: Error) => {
      if (client !== c) return;
      client = null;
      log('listening for wakes on %s failed, again in 1 s: %s', location, err.message);
      c.end().catch(() => undefined);
      if (!closed) retry = setTimeout(open, 1000);
    };
    c.on('error', fail);
    c.on('end', () => fail(new Error('the connection ended')));
    c.on('notification', (n) => {
      if (ownPids.has(n.processId)) return;
      if (n.channel === ROLLOUT_CHANNEL) wakeHere();
      else if (n.channel === NODE_CHANNEL) {
        const ids = nodeIdsOfPayload(n.payload);
        if (ids.length > 0) wakeNodesHere(ids);
      }
    });
    c.connect().then(() => c.query(`LISTEN ${ROLLOUT_CHANNEL}; LISTEN ${NODE_CHANNEL}`)).catch(fail);
  };
  const listen = () => {
    if (!client && !retry && !closed) open();
  };
  return {
    wakeHere,
    wakeNodesHere,
    // Remembers a pool connection of this store as its own (pg's processID: its backend's pid).
    own(c: pg.PoolClient) {
      const pid = (c as unknown as { processID?: number }).processID;
      if (typeof pid === 'number') ownPids.add(pid);
    },
    add(listener: () => void): () => void {
      listeners.add(listener);
      listen();
      return () => void listeners.delete(listener);
    },
    addNodes(listener: (nodeIds: readonly string[]) => void): () => void {
      nodeListeners.add(listener);
      listen();
      return () => void nodeListeners.delete(listener);
    },
    async close(): Promise<void> {
      closed = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
    },
  };
}

function cause(err: unknown): unknown {
  return err instanceof TransactionAbortedError ? err.original : err;
}

function retryableCode(err: unknown): string | null {
  const code = (cause(err) as { code?: string } | null)?.code;
  return code && RETRYABLE.has(code) ? code : null;
}
