// The bound on `trust-refresh` over helper.sock (docs/design.md §21.3): any member of the agent's
// group may send a bundle of up to 8 MiB, and nothing is trusted unless it verifies, but each
// verification is root's CPU. So: one verification at a time (a second while one runs is BUSY);
// a bundle byte-identical to the last one verified is answered from what it gave, without
// verifying it again (a success with what the store trusts now, a refusal with the same refusal
// for REFUSAL_MEMORY_MS, a TRUST_* one only); and the others take a token of a bucket of TRUST_REFRESH_BURST that
// refills one every TRUST_REFRESH_REFILL_MS (BUSY, naming when to try again, without one). An
// agent refreshes when the fleet's timestamp is re-signed (hourly) or its root rotates, and waits
// 5 minutes after a refusal: it never meets the bound. No tuf-js here: the handler loads it only
// when it verifies.
import { createHash } from 'node:crypto';
import { StewardError, toStewardError } from '../../core/errors.js';
import type { Clock } from '../../platform/clock.js';

export const TRUST_REFRESH_BURST = 4;
export const TRUST_REFRESH_REFILL_MS = 15_000;
export const REFUSAL_MEMORY_MS = 60_000;

type Outcome = { ok: true } | { ok: false; error: StewardError; at: number };

export class TrustRefreshGate {
  private running = false;
  private tokens = TRUST_REFRESH_BURST;
  private refilledAt: number;
  // Bumped whenever the store changes other than by the last verified bundle (a new root): an
  // identical bundle is then verified again.
  private generation = 0;
  private last: { digest: string; generation: number; outcome: Outcome } | null = null;
  // Verifications run (for tests and the log).
  verified = 0;

  constructor(private readonly clock: Pick<Clock, 'monotonic'>) {
    this.refilledAt = clock.monotonic();
  }

  // The trusted root was set: what the last bundle gave says nothing of the store now.
  storeChanged(): void {
    this.generation++;
    this.last = null;
  }

  // Runs `read` (the bundle's bytes) then `verify` under the bound. `current` answers an
  // identical bundle that verified before (what the store trusts now).
  // The bundle is read before the bound is taken: a client that sends its upload a byte at a time
  // (just inside the connection's idle timeout) holds only its own connection, never the bound
  // every other refresh waits on.
  async run<T>(read: () => Promise<Buffer>, verify: (bytes: Buffer) => Promise<T>, current: () => Promise<T>): Promise<T> {
    const bytes = await read();
    if (this.running) throw new StewardError('BUSY', 'trust-refresh: a trust bundle is being verified; one at a time: try again when it is done');
    this.running = true;
    try {
      const digest = createHash('sha256').update(bytes).digest('hex');
      const now = this.clock.monotonic();
      const last = this.last;
      if (last && last.digest === digest && last.generation === this.generation) {
        if (last.outcome.ok) return await current();
        if (now - last.outcome.at < REFUSAL_MEMORY_MS) throw last.outcome.error;
      }
      this.refill(now);
      if (this.tokens < 1) {
        const wait = Math.ceil((TRUST_REFRESH_REFILL_MS - (now - this.refilledAt)) / 1000);
        throw new StewardError('BUSY', `trust-refresh: at most ${TRUST_REFRESH_BURST} trust bundles are verified at once and one more every ${TRUST_REFRESH_REFILL_MS / 1000} s; try again in ${Math.max(1, wait)} s`);
      }
      this.tokens--;
      this.verified++;
      try {
        const answer = await verify(bytes);
        this.last = { digest, generation: this.generation, outcome: { ok: true } };
        return answer;
      } catch (err) {
        const error = toStewardError(err, 'INTERNAL');
        // Only a verdict on the bytes is remembered (TRUST_*), never a disk or I/O failure.
        this.last = error.code.startsWith('TRUST_') ? { digest, generation: this.generation, outcome: { ok: false, error, at: this.clock.monotonic() } } : null;
        throw error;
      }
    } finally {
      this.running = false;
    }
  }

  private refill(now: number): void {
    const earned = Math.floor((now - this.refilledAt) / TRUST_REFRESH_REFILL_MS);
    if (earned <= 0) return;
    this.tokens = Math.min(TRUST_REFRESH_BURST, this.tokens + earned);
    this.refilledAt = this.tokens === TRUST_REFRESH_BURST ? now : this.refilledAt + earned * TRUST_REFRESH_REFILL_MS;
  }
}
