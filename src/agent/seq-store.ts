// seq.json: the highest heartbeat seq this agent has used (DESIGN §6). A seq is made durable
// before the heartbeat carrying it is sent, so no restart can send a seq twice.
import { toStewardError } from '../core/errors.js';
import { writeJsonAtomic } from '../platform/fs-atomic.js';
import { readVersionedChecked } from '../platform/versioned-json.js';
// Checked without zod (agent-file-checks.ts; its test holds it to the zod schema).
import { checkSeqFile, SEQ_SCHEMA_VERSION } from './agent-file-checks.js';

export class SeqStore {
  private constructor(
    private readonly file: string,
    private last: number,
  ) {}

  // Opens seq.json: absent is lastSeq 0; invalid or newer throws STATE_INVALID.
  static async open(file: string): Promise<SeqStore> {
    const body = await readVersionedChecked(file, SEQ_SCHEMA_VERSION, checkSeqFile, 4096);
    return new SeqStore(file, body?.lastSeq ?? 0);
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

  // Raises lastSeq to at least `seq` (the control plane saw a higher one); durable. Never lowers it.
  async raise(seq: number): Promise<void> {
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
