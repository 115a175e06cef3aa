// The agent's side of core/control-plane-accepts.ts: after each heartbeat answer, what the control
// plane said it accepts goes to accepts.json for the helper, written only when it changed. An
// answer without `receiptVersions` (a control plane from before payload v2) is v1 only.
import { ACCEPTS_SCHEMA_VERSION, type AcceptsFile } from '../core/control-plane-accepts.js';
import { writeJsonAtomic } from '../platform/fs-atomic.js';
import type { Logf } from './convergence.js';

export class AcceptsWriter {
  private written: string | null = null;

  constructor(
    private readonly file: string,
    // This agent's version (what its heartbeats report).
    private readonly agentVersion: string,
    private readonly log: Logf,
  ) {}

  // Records the accepted versions (undefined: the control plane said none, so v1). A failed
  // write is logged and tried again at the next answer: the helper then keeps what it last read.
  async record(receiptVersions: readonly number[] | undefined): Promise<void> {
    const body: AcceptsFile = { schemaVersion: ACCEPTS_SCHEMA_VERSION, receiptVersions: [...(receiptVersions ?? [1])], agentVersion: this.agentVersion };
    const json = JSON.stringify(body);
    if (json === this.written) return;
    try {
      await writeJsonAtomic(this.file, body, 0o600);
      this.written = json;
      this.log('the control plane accepts receipt versions %s (%s)', body.receiptVersions.join(','), this.file);
    } catch (err) {
      this.log('WARNING: %s: cannot record the receipt versions the control plane accepts (%s)', this.file, (err as Error).message);
    }
  }
}
