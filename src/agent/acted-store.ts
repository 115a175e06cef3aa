// acted.json: the attemptIds of desired entries the agent has handed to the helper and the
// helper answered (accepted or refused). The agent never sends one of these again (docs/design.md §6).
import { toStewardError } from '../core/errors.js';
import { writeJsonAtomic } from '../platform/fs-atomic.js';
import { readVersionedJson } from '../platform/versioned-file.js';
import { ACTED_SCHEMA_VERSION, actedFileSchema, type ActedEntry } from './agent-file-schemas.js';

export type { ActedEntry };
// A control plane re-sends a desired entry only while its rollout is undecided, so a window of
// the last 1,024 attempts covers far more than any rollout keeps in flight for one node.
export const ACTED_MAX = 1024;


export class ActedStore {
  private constructor(
    private readonly file: string,
    private entries: readonly ActedEntry[],
    private readonly max: number,
  ) {}

  // Opens acted.json: absent is empty; invalid or newer throws STATE_INVALID.
  static async open(file: string, max = ACTED_MAX): Promise<ActedStore> {
    const body = await readVersionedJson(file, ACTED_SCHEMA_VERSION, actedFileSchema, 1024 * 1024);
    return new ActedStore(file, body?.acted ?? [], max);
  }

  // Whether the helper already answered this attemptId.
  has(attemptId: string): boolean {
    return this.entries.some((e) => e.attemptId === attemptId);
  }

  get all(): readonly ActedEntry[] {
    return this.entries;
  }

  // Records an answered attempt, durable before it returns; keeps the newest `max`.
  async add(entry: ActedEntry): Promise<void> {
    if (this.has(entry.attemptId)) return;
    const next = [...this.entries, entry].slice(-this.max);
    try {
      await writeJsonAtomic(this.file, { schemaVersion: ACTED_SCHEMA_VERSION, acted: next }, 0o600);
    } catch (err) {
      throw toStewardError(err, 'IO_ERROR', `${this.file}: cannot record the acted attempt ${entry.attemptId}`);
    }
    this.entries = next;
  }
}
