// The wake-up waits one instance holds (docs/design.md §18, wake-ups): each node's open
// `GET /v1/wait`s, answered when the store reports that node's desired set changed
// (onNodeWake: this instance's commits, and other instances' through NOTIFY), or when they time
// out. Bounded: at most `maxWaits` on the instance and `perNode` for one node, so neither a node
// holding many nor a flood can take the server's sockets (anonymous waits are refused before
// they reach here: wait-route.ts).
//
// A wake that finds no wait of its node (the node was sending its heartbeat, or its wait was on
// its way) is kept `unheardMs` for the node's next wait, which is then answered at once: a change
// made between a heartbeat's answer and the next wait is not missed. At worst that costs the node
// one heartbeat that finds nothing new.
import type { Clock } from '../../platform/clock.js';

export const MAX_WAIT_SECONDS = 60;
export const DEFAULT_MAX_WAITS = 10_000;
export const MAX_WAITS_PER_NODE = 2;
export const UNHEARD_MS = 10_000;
// The most unheard wakes kept; past it the oldest go (those nodes hear at their next heartbeat).
export const MAX_UNHEARD = 100_000;

// How a wait ended: its node's desired set changed, its time ran out, or the instance is closing.
export type WaitEnd = 'woken' | 'timeout' | 'closing';

export interface HeldWait {
  ended: Promise<WaitEnd>;
  // Gives the slot back without an answer (the client went away). Idempotent.
  cancel(): void;
}

export type Hold = { ok: true; wait: HeldWait } | { ok: false; busy: 'full' | 'node' };

export interface WaitRegistryOptions {
  clock: Pick<Clock, 'sleep' | 'monotonic'>;
  maxWaits?: number;
  perNode?: number;
  unheardMs?: number;
}

interface Waiter {
  end(how: WaitEnd): void;
}

export class WaitRegistry {
  private readonly byNode = new Map<string, Set<Waiter>>();
  private readonly unheard = new Map<string, number>();
  private held = 0;
  private closed = false;
  readonly maxWaits: number;
  readonly perNode: number;
  private readonly unheardMs: number;

  constructor(private readonly opts: WaitRegistryOptions) {
    this.maxWaits = opts.maxWaits ?? DEFAULT_MAX_WAITS;
    this.perNode = opts.perNode ?? MAX_WAITS_PER_NODE;
    this.unheardMs = opts.unheardMs ?? UNHEARD_MS;
    if (!Number.isSafeInteger(this.maxWaits) || this.maxWaits < 1) throw new RangeError(`max waits must be a whole number of at least 1, got ${this.maxWaits}`);
  }

  // The waits held now.
  get size(): number {
    return this.held;
  }

  // Holds a wait of `nodeId` for at most `timeoutMs`, or says why not: the node holds `perNode`
  // already ('node'), or the instance `maxWaits` ('full'). A wake the node has not heard yet ends
  // it at once.
  hold(nodeId: string, timeoutMs: number): Hold {
    const mine = this.byNode.get(nodeId);
    if ((mine?.size ?? 0) >= this.perNode) return { ok: false, busy: 'node' };
    if (this.held >= this.maxWaits || this.closed) return { ok: false, busy: 'full' };
    const at = this.unheard.get(nodeId);
    if (at !== undefined) {
      this.unheard.delete(nodeId);
      if (this.opts.clock.monotonic() - at <= this.unheardMs) return { ok: true, wait: { ended: Promise.resolve('woken'), cancel: () => {} } };
    }
    const stop = new AbortController();
    let done = false;
    let resolve!: (how: WaitEnd) => void;
    const ended = new Promise<WaitEnd>((r) => (resolve = r));
    const set = mine ?? new Set<Waiter>();
    const waiter: Waiter = {
      end: (how) => {
        if (done) return;
        done = true;
        this.held--;
        set.delete(waiter);
        if (set.size === 0 && this.byNode.get(nodeId) === set) this.byNode.delete(nodeId);
        stop.abort();
        resolve(how);
      },
    };
    set.add(waiter);
    this.byNode.set(nodeId, set);
    this.held++;
    this.opts.clock.sleep(timeoutMs, stop.signal).then(() => waiter.end('timeout'), () => undefined);
    return { ok: true, wait: { ended, cancel: () => waiter.end('closing') } };
  }

  // Ends every wait of these nodes 'woken'; a node without one keeps the wake for its next wait.
  wake(nodeIds: readonly string[]): void {
    const now = this.opts.clock.monotonic();
    for (const id of nodeIds) {
      const set = this.byNode.get(id);
      if (set && set.size > 0) {
        for (const w of [...set]) w.end('woken');
        continue;
      }
      this.unheard.delete(id);
      this.unheard.set(id, now);
      if (this.unheard.size > MAX_UNHEARD) this.dropOldUnheard(now);
    }
  }

  // Ends every wait 'closing' and takes no more. Idempotent.
  close(): void {
    this.closed = true;
    for (const set of [...this.byNode.values()]) for (const w of [...set]) w.end('closing');
    this.unheard.clear();
  }

  // Drops the wakes kept past unheardMs, and the oldest until under MAX_UNHEARD.
  private dropOldUnheard(now: number): void {
    for (const [id, at] of this.unheard) {
      if (this.unheard.size <= MAX_UNHEARD && now - at <= this.unheardMs) break;
      this.unheard.delete(id);
    }
  }
}
