// seq.json: the highest heartbeat seq this agent has used (docs/design.md §6). A seq is made durable
// before the heartbeat carrying it is sent, so no restart can send a seq twice.
import { toStewardError } from '../core/errors.js';
import { MAX_ADOPTED_SEQ } from '../core/heartbeat-limits.js';
import { writeJsonAtomic } from '../platform/fs-atomic.js';
import { logger } from '../platform/log.js';
import { readVersionedJson } from '../platform/versioned-file.js';
import { SEQ_SCHEMA_VERSION, seqFileSchema } from './agent-file-schemas.js';

export class SeqStore {
  private constructor(
    private readonly file: string,
    private last: number,
  ) {}

  // Opens seq.json: absent is lastSeq 0; invalid or newer throws STATE_INVALID. A lastSeq above
  // MAX_ADOPTED_SEQ (an older agent adopted it from a control plane's 409) starts again at 0, with
  // a warning: the control plane's next 409 names the seq to jump past, and a seq near the safe
  // integers' end would soon be one the agent cannot send or store.
  static async open(file: string, log: (format: string, ...args: unknown[]) => void = logger('agent:seq')): Promise<SeqStore> {
    const body = await readVersionedJson(file, SEQ_SCHEMA_VERSION, seqFileSchema, 4096);
    const last = body?.lastSeq ?? 0;
    if (last > MAX_ADOPTED_SEQ) {
      log('WARNING: %s holds lastSeq=%d, above %d, the highest seq this agent keeps: starting again from 0 (the control plane answers 409 with the seq to jump past)', file, last, MAX_ADOPTED_SEQ);
      return new SeqStore(file, 0);
    }
    return new SeqStore(file, last);
  }

  get lastSeq(): number {
    return this.last;
  }

  // Allocates the next seq: durable (fsynced) before it returns.
  async next(): Promise<number> {
    const seq = this.last + 1;
    await this.persist(seq);
    return seq;
  }

  // Raises lastSeq to at least `seq` (the control plane saw a higher one); durable. Never lowers
  // it; a seq above MAX_ADOPTED_SEQ is a RangeError (the answer's reader refuses those first).
  async raise(seq: number): Promise<void> {
    if (!Number.isSafeInteger(seq) || seq > MAX_ADOPTED_SEQ) throw new RangeError(`${this.file}: will not adopt heartbeat seq ${seq} (above ${MAX_ADOPTED_SEQ})`);
    if (seq <= this.last) return;
    await this.persist(seq);
  }

  private async persist(seq: number): Promise<void> {
    try {
      await writeJsonAtomic(this.file, { schemaVersion: SEQ_SCHEMA_VERSION, lastSeq: seq }, 0o600);
    } catch (err) {
      throw toStewardError(err, 'IO_ERROR', `${this.file}: cannot write the heartbeat seq`);
    }
    this.last = seq;
  }
}
