import type { Progress } from '../protocol/progress.js';
import { shown } from './output.js';

// A one-line progress bar on stderr, drawn only when stderr is a TTY and --json is off.
export interface ProgressBar {
  update(p: Progress): void;
  done(): void;
}

function human(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

// A bar when `enabled`, else a no-op.
export function createProgressBar(enabled: boolean, stream: NodeJS.WriteStream = process.stderr): ProgressBar {
  if (!enabled || !stream.isTTY) return { update: () => {}, done: () => {} };
  let drawn = false;
  let last = 0;
  return {
    update({ phase, bytes, total }) {
      const now = Date.now();
      if (now - last < 100 && phase === 'fetch') return;
      last = now;
      const width = 30;
      // The phase is the helper's word: its control characters escaped like all such text.
      let line = `${shown(phase).padEnd(8)}`;
      if (total && bytes !== undefined) {
        const f = Math.min(1, bytes / total);
        line += ` [${'#'.repeat(Math.round(f * width)).padEnd(width)}] ${human(bytes)} / ${human(total)}`;
      } else if (bytes !== undefined) {
        line += ` ${human(bytes)}`;
      }
      stream.write(`\r\x1b[2K${line}`);
      drawn = true;
    },
    done() {
      if (drawn) stream.write('\r\x1b[2K');
    },
  };
}
