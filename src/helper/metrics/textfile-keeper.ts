// Keeps one node_exporter textfile up to date: each change asks for the text anew, and a text
// that differs from the one last written replaces the file atomically (write a temp file opened
// O_EXCL|O_NOFOLLOW, fsync, rename over, fsync the folder: src/platform/fs-atomic.ts), so a
// scraper reads the old file or the new one, never a part. Nothing runs between changes (no
// timer: the helper's idle wakeups are bench row 5); changes that arrive while a write runs
// share the next one. A write that fails is logged and counted, never thrown: the textfile is
// an account of the updates, and no update waits on it or fails with it.
import { lstatSync, statSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import { writeFileAtomic } from '../../platform/fs-atomic.js';
import { logger } from '../../platform/log.js';
import { folderTrustProblem, trustScope } from '../../platform/trusted-file.js';

const log = logger('helper:metrics');

export interface TextfileKeeper {
  // Asks for the file to be brought up to date soon. Never throws: a failed write is logged.
  changed(): void;
  // Resolves once no write is asked for or running (tests; the helper's stop).
  idle(): Promise<void>;
}

// Keeps `file` (the host config's metrics.textfile) as `render` makes it; `render` is told how
// many writes have failed so far (the text counts them, and shows them once a write succeeds).
export function keepTextfile(file: string, render: (writeErrors: number) => Promise<string>): TextfileKeeper {
  let dirty = false;
  let running: Promise<void> | null = null;
  let written: string | null = null;
  let writeErrors = 0;
  let lastError = '';
  const run = async () => {
    while (dirty) {
      dirty = false;
      try {
        const text = await render(writeErrors);
        if (text === written) continue;
        await writeTextfile(file, text);
        written = text;
        lastError = '';
      } catch (err) {
        writeErrors++;
        const code = (err as NodeJS.ErrnoException)?.code;
        // EROFS under the helper's unit: its sandbox (ProtectSystem=strict) opens only the folders
        // its ReadWritePaths= name (docs/metrics.md).
        const hint = code === 'EROFS' ? `; the folder is read-only to steward-helper.service: name it in a drop-in's ReadWritePaths= (docs/metrics.md)` : '';
        const why = `${(err as Error)?.message ?? String(err)}${hint}`;
        // One line per new reason: a folder that is missing stays so for every change.
        if (why !== lastError) log('metrics textfile %s not written: %s', file, why);
        lastError = why;
      }
    }
    running = null;
  };
  return {
    changed() {
      dirty = true;
      // Why on the next turn: the changes of one request (state, journal, receipt) come together.
      running ??= new Promise<void>((resolve) => setImmediate(resolve)).then(run);
    },
    idle: () => running ?? Promise.resolve(),
  };
}

// Root writes this file, so its folder, and every folder above it, must be one that only root
// (or, unprivileged, this user) can write (src/platform/trusted-file.ts): in a folder another
// user can write, they could swap the name between the checks and the rename. A symlink at the
// path is refused although the rename would replace the link, not follow it: the path is named
// in the config as the file node_exporter reads, and a link there was put by someone else; so is
// anything else that is not a regular file. The folder must exist (it is node_exporter's).
async function writeTextfile(file: string, text: string): Promise<void> {
  const dir = path.dirname(file);
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new StewardError('NOT_FOUND', `the folder ${dir} does not exist`);
  const why = await folderTrustProblem(dir, trustScope(dir));
  if (why) throw new StewardError('ROOT_UNSAFE', `refusing to write into ${dir}: ${why}`);
  let st;
  try {
    st = lstatSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (st && !st.isFile()) throw new StewardError('ROOT_UNSAFE', `${file} is ${st.isSymbolicLink() ? 'a symlink' : 'not a regular file'}; refusing to replace it`);
  // 0644: node_exporter reads it as its own user.
  await writeFileAtomic(file, text, 0o644);
}
