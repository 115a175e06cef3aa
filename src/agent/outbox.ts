// The agent's outbox (docs/design.md §6): the helper's signed receipts waiting for the control plane's
// acknowledgement, kept in outbox.json so that an agent restart neither loses nor repeats one.
import type { KeyObject } from 'node:crypto';
import { StewardError, toStewardError } from '../core/errors.js';
import { receiptPayloadSchema } from '../core/receipt-schema.js';
import { RELAY_MARK_SCHEMA_VERSION, type RelayMark } from '../core/relay-mark.js';
import type { Envelope } from '../core/release-schemas.js';
import { verifyReceipt } from '../platform/verify-receipt.js';
import { readVersionedJson } from '../platform/versioned-file.js';
import { OUTBOX_SCHEMA_VERSION, outboxFileSchema, type OutboxFile } from '../core/outbox-schema.js';
import { writeJsonAtomic } from '../platform/fs-atomic.js';
import { keyIdOf } from '../platform/keys.js';
import { logger } from '../platform/log.js';

const log = logger('agent:outbox');

// docs/design.md §6: at most 64 of the oldest pending receipts go in one heartbeat.
export const HEARTBEAT_RECEIPTS_MAX = 64;
// The outbox grows only while the control plane does not acknowledge; 64 MiB is far more
// receipts (~1 KiB each) than a host makes, yet still refuses a runaway file.
const OUTBOX_MAX_BYTES = 64 * 1024 * 1024;
// The most receipts pending at once (~18 MiB of outbox.json, well inside what open() reads):
// past it take() leaves the newer receipts with the helper, which keeps every receipt above the
// relay mark, so none is lost and the agent can always read back its own outbox.
export const OUTBOX_MAX_PENDING = 16_384;

interface PendingReceipt {
  seq: number;
  envelope: Envelope;
}

interface OutboxState {
  helperKeyId: string | null;
  highestSeq: number;
  pending: readonly PendingReceipt[];
}

export interface TakeResult {
  // Receipts newly copied into pending.
  added: number;
  // Receipts that did not verify against the helper key (forged, another key, bad shape): never taken.
  rejected: number;
  // Pending receipts signed by the previous helper key, dropped because the key changed.
  dropped: number;
}

// The seq an envelope's payload claims, unverified; Infinity when it claims none (then the
// envelope goes to the verifier, which refuses it). The envelope comes over a socket: every
// step is checked.
function claimedSeq(envelope: unknown): number {
  const payload = (envelope as { payload?: unknown } | null)?.payload;
  if (typeof payload !== 'string' || payload.length > 48 * 1024) return Infinity;
  try {
    const seq = (JSON.parse(Buffer.from(payload, 'base64').toString('utf8')) as { seq?: unknown } | null)?.seq;
    return Number.isSafeInteger(seq) ? (seq as number) : Infinity;
  } catch {
    return Infinity;
  }
}

// The receipt seq inside an envelope's payload, or null when the payload is not a receipt.
// Used only on the agent's own outbox file; what comes from the helper is verified instead.
function seqOfStored(envelope: Envelope): number | null {
  try {
    const r = receiptPayloadSchema.safeParse(JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')));
    return r.success ? r.data.seq : null;
  } catch {
    return null;
  }
}

function decodeFile(file: string, body: OutboxFile): OutboxState {
  const pending: PendingReceipt[] = [];
  let last = 0;
  for (const [i, envelope] of body.pending.entries()) {
    const seq = seqOfStored(envelope);
    if (seq === null) throw new StewardError('STATE_INVALID', `${file}: pending[${i}] is not a receipt`);
    if (seq <= last || seq > body.highestSeq) {
      throw new StewardError('STATE_INVALID', `${file}: pending[${i}] has seq ${seq}, out of order or above highestSeq ${body.highestSeq}`);
    }
    if (envelope.keyId !== body.helperKeyId) {
      throw new StewardError('STATE_INVALID', `${file}: pending[${i}] (seq=${seq}) is signed by key ${envelope.keyId}, not helperKeyId ${body.helperKeyId}`);
    }
    pending.push({ seq, envelope });
    last = seq;
  }
  return { helperKeyId: body.helperKeyId, highestSeq: body.highestSeq, pending };
}

function encodeFile(state: OutboxState): OutboxFile {
  return {
    schemaVersion: OUTBOX_SCHEMA_VERSION,
    helperKeyId: state.helperKeyId,
    highestSeq: state.highestSeq,
    pending: state.pending.map((p) => p.envelope),
  };
}

// The outbox of docs/design.md §6. Every mutation computes the next state, writes it with the atomic
// file replace and only then adopts it: a crash leaves the old or the new file, and a failed
// write leaves this object as it was. Mutations run one at a time, in call order.
export class Outbox {
  private state: OutboxState;
  private queue: Promise<unknown> = Promise.resolve();
  // The relay mark last written by this object, as JSON ('' before the first).
  private markWritten = '';

  private constructor(
    private readonly file: string,
    state: OutboxState,
    private readonly markFile: string | null,
    private readonly maxPending: number,
  ) {
    this.state = state;
  }

  // Opens the outbox at `file`: absent is empty; unreadable, invalid or newer than this steward
  // throws STATE_INVALID and the file is left as it is (never overwritten silently). With
  // `markFile`, every change is followed by the relay mark (core/relay-mark.ts) it implies.
  // `maxPending` (default OUTBOX_MAX_PENDING) bounds what take() adds, never what open() reads.
  static async open(file: string, opts: { markFile?: string; maxPending?: number } = {}): Promise<Outbox> {
    const body = await readVersionedJson(file, OUTBOX_SCHEMA_VERSION, outboxFileSchema, OUTBOX_MAX_BYTES);
    const state = body === null ? { helperKeyId: null, highestSeq: 0, pending: [] } : decodeFile(file, body);
    return new Outbox(file, state, opts.markFile ?? null, opts.maxPending ?? OUTBOX_MAX_PENDING);
  }

  // The relay mark: every receipt at or below `relayedSeq` has left the outbox acknowledged (or
  // was dropped for good), so the helper may let it go. null before any receipt was taken.
  get relayMark(): RelayMark | null {
    const { helperKeyId, highestSeq, pending } = this.state;
    if (helperKeyId === null) return null;
    const first = pending[0];
    return { schemaVersion: RELAY_MARK_SCHEMA_VERSION, helperKeyId, relayedSeq: first ? first.seq - 1 : highestSeq };
  }

  // Writes the relay mark when it differs from the one last written; before any receipt was
  // taken, a mark of nothing relayed under helper key `keyId` (enrollment knows that key). A
  // failed write is logged, never thrown: without a fresh mark the helper only keeps more.
  async publishRelayMark(keyId?: string): Promise<void> {
    if (this.markFile === null) return;
    const mark = this.relayMark ?? (keyId ? { schemaVersion: RELAY_MARK_SCHEMA_VERSION, helperKeyId: keyId, relayedSeq: 0 } : null);
    if (mark === null) return;
    const json = JSON.stringify(mark);
    if (json === this.markWritten) return;
    try {
      await writeJsonAtomic(this.markFile, mark, 0o600);
      this.markWritten = json;
      log('relay mark helperKeyId=%s relayedSeq=%d', mark.helperKeyId, mark.relayedSeq);
    } catch (err) {
      log('WARNING: %s: cannot write the relay mark (%s); the helper keeps the receipts above the last one', this.markFile, (err as Error).message);
    }
  }

  get helperKeyId(): string | null {
    return this.state.helperKeyId;
  }

  get highestSeq(): number {
    return this.state.highestSeq;
  }

  get pending(): readonly Envelope[] {
    return this.state.pending.map((p) => p.envelope);
  }

  // The seqs of the pending receipts, oldest first.
  get pendingSeqs(): readonly number[] {
    return this.state.pending.map((p) => p.seq);
  }

  // Copies every receipt that verifies against `helperKey` and has a seq above highestSeq into
  // pending, and raises highestSeq; durable before it returns. The seq is read from the signed
  // payload, so a caller cannot pair a receipt with the wrong seq. When the key's id differs from
  // the outbox's, the helper key changed: highestSeq restarts at 0 and the pending receipts signed
  // by the old key are dropped, because the control plane rejects a heartbeat whole for a receipt
  // its recorded helper key does not verify, and one such receipt would block every later one.
  async take(helperKey: KeyObject, receipts: readonly Envelope[]): Promise<TakeResult> {
    return this.serialized(async () => {
      const keyId = keyIdOf(helperKey);
      const cur = this.state;
      const keyChanged = cur.helperKeyId !== null && cur.helperKeyId !== keyId;
      const base: OutboxState = keyChanged || cur.helperKeyId === null ? { helperKeyId: keyId, highestSeq: 0, pending: [] } : cur;

      let rejected = 0;
      const fresh = new Map<number, Envelope>();
      // The helper lists every receipt it keeps at each heartbeat; one whose payload claims a seq
      // at or below highestSeq is not taken whatever it holds, so only the new ones pay for a
      // signature check.
      const unseen = receipts.filter((e) => !(claimedSeq(e) <= base.highestSeq));
      for (const envelope of unseen) {
        const payload = verifyReceipt(envelope, helperKey);
        if (payload === null) {
          rejected++;
          continue;
        }
        if (payload.seq > base.highestSeq && !fresh.has(payload.seq)) fresh.set(payload.seq, envelope);
      }
      const fits = Math.max(0, this.maxPending - base.pending.length);
      const sorted = [...fresh].map(([seq, envelope]) => ({ seq, envelope })).sort((a, b) => a.seq - b.seq);
      // In seq order, so that highestSeq (the last taken) still means "every one up to here".
      const added = sorted.slice(0, fits);
      if (added.length < sorted.length) log('WARNING: the outbox holds %d receipts, its most: %d newer ones left with the helper until the control plane acknowledges', base.pending.length + added.length, sorted.length - added.length);
      const dropped = keyChanged ? cur.pending.length : 0;
      if (rejected > 0) log('receipts not signed by the helper key skipped count=%d keyId=%s', rejected, keyId);
      if (added.length === 0 && base === cur) return { added: 0, rejected, dropped };

      const next: OutboxState = {
        helperKeyId: keyId,
        highestSeq: added.length ? Math.max(base.highestSeq, (added[added.length - 1] as PendingReceipt).seq) : base.highestSeq,
        pending: [...base.pending, ...added],
      };
      await this.persist(next);
      if (keyChanged) {
        log('helper key changed from=%s to=%s; dropped pending seqs=%s', cur.helperKeyId, keyId, cur.pending.map((p) => p.seq).join(',') || 'none');
      }
      log('receipts taken added=%d highestSeq=%d pending=%d', added.length, next.highestSeq, next.pending.length);
      return { added: added.length, rejected, dropped };
    });
  }

  // The oldest `max` pending receipts (at most 64 by default), for the next heartbeat.
  // The oldest pending receipts for one heartbeat: at most `max` of them and, past the first, at
  // most `maxBytes` JSON-encoded in all (the first always goes: alone it is far below the limit).
  batch(max = HEARTBEAT_RECEIPTS_MAX, maxBytes = Infinity): Envelope[] {
    if (!Number.isSafeInteger(max) || max < 0) throw new RangeError(`batch size must be a non-negative integer, got ${max}`);
    const out: Envelope[] = [];
    let bytes = 0;
    for (const p of this.state.pending.slice(0, max)) {
      const size = Buffer.byteLength(JSON.stringify(p.envelope), 'utf8') + 1;
      if (out.length > 0 && bytes + size > maxBytes) break;
      out.push(p.envelope);
      bytes += size;
    }
    return out;
  }

  // Removes the receipts whose seqs the control plane acknowledged; durable before it returns.
  // Seqs that are not pending are ignored; when nothing is removed nothing is written.
  async ack(seqs: readonly number[]): Promise<void> {
    return this.serialized(async () => {
      const acked = new Set(seqs);
      const cur = this.state;
      const kept = cur.pending.filter((p) => !acked.has(p.seq));
      if (kept.length === cur.pending.length) return;
      await this.persist({ ...cur, pending: kept });
      log('receipts acknowledged removed=%d pending=%d', cur.pending.length - kept.length, kept.length);
    });
  }

  // Writes `next` (0600, atomic replace with fsyncs) and only then adopts it in memory; then the
  // relay mark, which must never run ahead of what the outbox holds durably.
  private async persist(next: OutboxState): Promise<void> {
    try {
      await writeJsonAtomic(this.file, encodeFile(next), 0o600);
    } catch (err) {
      throw toStewardError(err, 'IO_ERROR', `${this.file}: cannot write the outbox`);
    }
    this.state = next;
    await this.publishRelayMark();
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
