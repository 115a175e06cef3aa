import { closeSync } from 'node:fs';
import { toStewardError } from '../../core/errors.js';
import { appFdNumbers, openFifoForChild, type AppFdPaths } from './app-fds.js';

// The FIFOs of a start (app-fds.ts) opened for the process runner's spawn, in fd order: `list`
// goes after stdin, stdout and stderr in spawn's stdio; `close` closes the helper's copies.
export function openChildFds(fds: AppFdPaths | undefined, what: string): { list: number[]; close(): void } {
  const list: number[] = [];
  const close = () => {
    for (const fd of list.splice(0)) closeSync(fd);
  };
  try {
    for (const f of appFdNumbers(fds)) list.push(openFifoForChild(f.path));
  } catch (err) {
    close();
    throw toStewardError(err, 'IO_ERROR', `cannot start ${what}: its ${READY_OR_WATCHDOG} FIFO`);
  }
  return { list, close };
}

const READY_OR_WATCHDOG = 'readiness or watchdog';
