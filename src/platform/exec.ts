import { execFile } from 'node:child_process';

// Durable tree (docs/design.md §2): one syncfs of the file system holding `dir` (`sync -f`)
// instead of an fsync per extracted file. node:child_process, not execa: execa is ~100 modules
// and ~10 MB of RSS that a helper would keep for good after its first stage (issue 8 row 5).
// No shell, an environment built from nothing, no stdin; a non-zero exit or a signal rejects.
export function syncFileSystem(dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile('sync', ['-f', dir], { env: { PATH: '/usr/local/bin:/usr/bin:/bin' } }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`sync -f ${dir} failed: ${stderr.trim() || err.message}`, { cause: err }));
      else resolve();
    });
    child.stdin?.end();
  });
}

export interface ToolResult {
  // The exit code, or null when the tool was killed by a signal or never ran.
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  // Its output, without one final newline (as execa gives it).
  stdout: string;
  stderr: string;
  // Killed at `timeoutMs`.
  timedOut: boolean;
  // Why it failed when it did: the tool could not run, a signal, a timeout, an output over
  // `maxBuffer`, or a non-zero exit (null when it exited 0).
  failure: string | null;
}

// Runs a system tool (systemctl, journalctl) the way the helper's runners need it: no shell, an
// environment built from `env` alone, stdin at EOF, SIGTERM at `timeoutMs`, at most
// `maxBuffer` bytes of each output. Never rejects: the caller judges the result.
// node:child_process rather than execa, which the helper would keep for good (~10 MB, issue 8
// row 5) from its start on any systemd host: build-core asks `systemctl is-system-running`.
export function runTool(file: string, args: string[], opts: { env: Record<string, string>; timeoutMs: number; maxBuffer?: number }): Promise<ToolResult> {
  return new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      { env: opts.env, timeout: opts.timeoutMs, killSignal: 'SIGTERM', maxBuffer: opts.maxBuffer ?? 16 * 1024 * 1024, encoding: 'utf8' },
      (err, stdout, stderr) => {
        const e = err as (NodeJS.ErrnoException & { killed?: boolean; signal?: NodeJS.Signals | null; code?: string | number }) | null;
        const exitCode = e === null ? 0 : typeof e.code === 'number' ? e.code : null;
        const signal = e?.signal ?? null;
        const timedOut = e !== null && e.killed === true && signal === 'SIGTERM' && e.code !== 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER';
        const failure =
          e === null
            ? null
            : timedOut
              ? `timed out after ${opts.timeoutMs} ms`
              : e.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER'
                ? `its output went over ${opts.maxBuffer ?? 16 * 1024 * 1024} bytes`
                : exitCode !== null
                  ? `exit code ${exitCode}`
                  : signal !== null
                    ? `killed by ${signal}`
                    : e.message;
        resolve({ exitCode, signal, stdout: stripFinalNewline(String(stdout)), stderr: stripFinalNewline(String(stderr)), timedOut, failure });
      },
    );
    child.stdin?.end();
  });
}

function stripFinalNewline(s: string): string {
  return s.endsWith('\r\n') ? s.slice(0, -2) : s.endsWith('\n') ? s.slice(0, -1) : s;
}
