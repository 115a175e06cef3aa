// Seeded fast-check runs for the property suites (issue 7 item 5). Every property runs from one
// seed, printed on stdout, so a failure in CI replays with STEWARD_TEST_SEED=<seed> (the
// convention of test/helpers/prng.ts users). STEWARD_PROPERTY_RUNS=<factor> multiplies every
// run count, for a longer local search; CI runs the counts written in the tests.
import assert from 'node:assert/strict';
import fc from 'fast-check';

export const SEED = Number(process.env.STEWARD_TEST_SEED ?? 20261130);
const FACTOR = Number(process.env.STEWARD_PROPERTY_RUNS ?? 1);

if (!Number.isSafeInteger(SEED)) throw new Error(`STEWARD_TEST_SEED must be an integer, got ${process.env.STEWARD_TEST_SEED}`);
if (!(FACTOR > 0)) throw new Error(`STEWARD_PROPERTY_RUNS must be a positive number, got ${process.env.STEWARD_PROPERTY_RUNS}`);

// A run that never settles fails instead of hanging the file (a reader that throws inside a
// stream's 'data' handler stalls the stream, and the promise waiting on it never settles).
// Far above any run's time, even on a loaded machine.
const RUN_TIMEOUT_MS = 10_000;

const uncaught: unknown[] = [];
const onUncaught = (err: unknown) => void uncaught.push(err);

// An async predicate that, after its own checks, lets pending callbacks (socket events, timers
// due now) run and fails if one threw with no one to catch it: an exception that would end a
// helper or control plane is then pinned on the input that caused it, and shrunk, instead of
// failing the test file anonymously. (fast-check's afterEach hook cannot fail a run.)
export function guarded<Ts extends unknown[]>(predicate: (...args: Ts) => Promise<void>): (...args: Ts) => Promise<void> {
  return async (...args: Ts) => {
    uncaught.length = 0;
    await predicate(...args);
    // A few turns of the event loop: a stream's next 'data' may be one more turn away.
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    const errors = uncaught.splice(0);
    assert.deepEqual(errors.map((e) => (e instanceof Error ? e.stack : String(e))), [], 'an exception escaped: it would crash the process');
  };
}

// Total runs made by this test file, printed at its end by the caller if it wants.
export const runsMade = { count: 0 };

// Runs `property` `numRuns` times (times STEWARD_PROPERTY_RUNS) from SEED, printing the seed and
// the run count. On a failure it throws fast-check's report (counterexample, shrunk, and the
// seed/path that replays it) with the replay command in front.
export async function checkProperty<Ts>(name: string, property: fc.IAsyncPropertyWithHooks<Ts> | fc.IPropertyWithHooks<Ts>, numRuns: number): Promise<void> {
  const runs = Math.max(1, Math.round(numRuns * FACTOR));
  // Collects what `guarded` predicates check (see there).
  process.on('uncaughtException', onUncaught);
  let details: fc.RunDetails<Ts>;
  try {
    details = await fc.check(property as fc.IAsyncProperty<Ts>, { seed: SEED, numRuns: runs, endOnFailure: false, timeout: RUN_TIMEOUT_MS });
  } finally {
    process.off('uncaughtException', onUncaught);
  }
  runsMade.count += details.numRuns;
  process.stdout.write(`# property "${name}": seed ${SEED}, ${details.numRuns} runs${details.failed ? `, FAILED after ${details.numRuns} runs (${details.numShrinks} shrinks)` : ''}\n`);
  if (details.failed) {
    const report = fc.defaultReportMessage(details) ?? 'failed';
    const why = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    throw new Error(`property "${name}" failed; replay with STEWARD_TEST_SEED=${SEED}\n${report}\nCounterexample with bytes as text: ${asText(details.counterexample)}\nError: ${why}`);
  }
}

// The counterexample as JSON, with Buffers shown as their UTF-8 text.
function asText(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    const b = v as { type?: unknown; data?: unknown };
    if (!(b && b.type === 'Buffer' && Array.isArray(b.data))) return v;
    const bytes = Buffer.from(b.data as number[]);
    return `<bytes ${JSON.stringify(bytes.toString('utf8'))}${bytes.length <= 64 ? ` hex ${bytes.toString('hex')}` : ''}>`;
  });
}
