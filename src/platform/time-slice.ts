// Lets a loop of synchronous calls (thousands of small links, folders and lstats, where a
// thread-pool round trip per call costs more than the call: bench/objects.ts) give the event
// loop a turn every `sliceMs`, so that what runs beside it (a pack coming in, status requests)
// is held up for at most a slice. By time, not by count: a count tuned for one disk blocks
// for long on a slow one, and yields needlessly on a fast one (a pack coming in beside a tree
// being laid out came in 50-90 ms after it with a turn per 256 calls, 20-30 ms with one per 2 ms).
export class TimeSlicer {
  private last = performance.now();
  private n = 0;

  constructor(private readonly sliceMs = 2) {}

  // Whether the slice is over (the clock is read at every 16th call only).
  due(): boolean {
    if ((++this.n & 15) !== 0) return false;
    return performance.now() - this.last >= this.sliceMs;
  }

  // A turn of the event loop (setImmediate runs after the pending I/O callbacks), then a new slice.
  async pass(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.last = performance.now();
  }
}
