// The lstat worker (worker_threads) of stat-ahead.ts: given a list of paths and a shared buffer,
// lstats each in turn and writes what it found, publishing how many are done, so that the
// helper's main thread takes each result as it links (docs/design.md §20.3). It only reads
// metadata; what to trust is decided on the main thread.
import fs from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { FIELDS, STAT_STOP, type StatJob } from './stat-layout.js';

parentPort?.on('message', (job: StatJob) => {
  const progress = new Int32Array(job.shared, 0, 2);
  const out = new Float64Array(job.shared, 8);
  const paths = job.paths.split('\n');
  let i = 0;
  try {
    for (; i < paths.length; i++) {
      if (Atomics.load(progress, 1) === STAT_STOP) break;
      const at = i * FIELDS;
      let st: fs.Stats | undefined;
      try {
        st = fs.lstatSync(paths[i] as string, { throwIfNoEntry: false });
      } catch {
        st = undefined;
      }
      // A path that is missing or cannot be read: 0 kind, and the main thread looks itself.
      if (st === undefined) out[at] = 0;
      else {
        out[at] = st.isFile() ? 1 : 2;
        out[at + 1] = st.ino;
        out[at + 2] = st.ctimeMs;
        out[at + 3] = st.mode;
        out[at + 4] = st.size;
        out[at + 5] = st.uid;
        out[at + 6] = st.gid;
      }
      Atomics.store(progress, 0, i + 1);
      if ((i & 63) === 63) Atomics.notify(progress, 0);
    }
  } finally {
    Atomics.notify(progress, 0);
    parentPort?.postMessage({ done: i });
  }
});
