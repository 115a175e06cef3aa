import { spawn } from 'node:child_process';
import { constants as C, promises as fsp, statSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import type { HostConfig } from '../../core/config-schema.js';
import { StewardError, toStewardError } from '../../core/errors.js';
import { appLogFile, hostPaths, type HostPaths } from '../../core/paths.js';
import { runTool } from '../../platform/exec.js';
import { APP_PATH, appUnitName, systemdAvailable } from '../../platform/systemd.js';
import { systemAccounts } from '../../platform/users.js';
import { loadHostConfig, requireApp } from '../../host/config.js';
import { tailLines } from '../../platform/log-tail.js';
import { clientRoot, type GlobalOptions } from '../context.js';
import { printJson } from '../output.js';

// Where an app's output is: the journal of its unit (a `unit` app, or a `process` app that the
// helper runs as a transient unit), else its log file (the detached runner).
export type LogSource = { kind: 'journal'; unit: string } | { kind: 'file'; file: string };

// The source for `app`, decided as the helper decides its process runner (build-core.ts): "auto"
// is the systemd runner when systemd is PID 1 and the helper is root, which the CLI reads off the
// owner of the helper's state folder (it runs without the helper, which may be down).
export async function logSourceOf(paths: HostPaths, config: HostConfig, app: string): Promise<LogSource> {
  const cfg = requireApp(config, app);
  if (cfg.runner === 'unit') return { kind: 'journal', unit: cfg.unit };
  const choice = config.supervisor.processRunner;
  const units = choice === 'systemd' || (choice === 'auto' && ownedByRoot(paths.varLib) && (await systemdAvailable().catch(() => false)));
  return units ? { kind: 'journal', unit: appUnitName(app) } : { kind: 'file', file: appLogFile(paths, app) };
}

function ownedByRoot(dir: string): boolean {
  try {
    return statSync(dir).uid === 0;
  } catch {
    return false;
  }
}

// The last `n` lines of the source.
async function lastLines(source: LogSource, n: number): Promise<string[]> {
  const text = source.kind === 'file' ? await fileTail(source.file, n) : await journalTail(source.unit, n);
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

async function fileTail(file: string, n: number): Promise<string> {
  try {
    // tailLines reads a missing file as empty; here that is worth saying.
    await fsp.lstat(file);
    return await tailLines(file, 0, n, tailBytes(n));
  } catch (err) {
    throw fileError(err, file);
  }
}

function fileError(err: unknown, file: string): StewardError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new StewardError('NOT_FOUND', `${file} does not exist (the app has written nothing yet)`, { cause: err });
  if (code === 'EACCES') return new StewardError('NEEDS_ROOT', `${file} is readable by root only`, { cause: err });
  return toStewardError(err, 'IO_ERROR', `cannot read ${file}`);
}

const JOURNAL_ENV = { PATH: APP_PATH, LANG: 'C.UTF-8' };
const journalArgs = (unit: string, n: number) => ['-u', unit, '-n', String(n), '-o', 'cat', '--no-pager', '-q'];

async function journalTail(unit: string, n: number): Promise<string> {
  const r = await runTool('journalctl', journalArgs(unit, n), { env: JOURNAL_ENV, timeoutMs: 30_000, maxBuffer: 64 * 1024 * 1024 });
  if (r.failure !== null) throw new StewardError('SYSTEM_COMMAND_FAILED', `journalctl -u ${unit} failed: ${(r.stderr || r.failure).trim()}`);
  return r.stdout;
}

// Follows the journal: journalctl itself, its output straight to ours, until it ends.
function followJournal(unit: string, n: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('journalctl', [...journalArgs(unit, n), '-f'], { env: JOURNAL_ENV, stdio: ['ignore', 'inherit', 'inherit'], shell: false });
    child.once('error', (err) => reject(toStewardError(err, 'SYSTEM_COMMAND_FAILED', `journalctl -u ${unit} -f`)));
    child.once('close', (code) => resolve(code ?? 1));
  });
}

// Follows the log file: its last `n` lines, then whatever is appended, every 250 ms, until
// interrupted. When the helper cuts the file to its newest part (logMaxBytes), the follow goes
// on from its new end and says so on stderr.
async function followFile(file: string, n: number): Promise<never> {
  let h: fsp.FileHandle;
  try {
    await fsp.lstat(file);
    h = await fsp.open(file, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (err) {
    throw fileError(err, file);
  }
  // The last lines up to one size, and from that size on everything: nothing twice, nothing lost.
  let pos = (await h.stat()).size;
  const from = Math.max(0, pos - tailBytes(n));
  const head = Buffer.alloc(pos - from);
  await h.read(head, 0, head.length, from);
  // A last line not finished yet is printed by the loop below, once written.
  const whole = head.lastIndexOf(0x0a) + 1;
  pos = from + whole;
  const lines = head.subarray(0, whole).toString('utf8').split('\n').slice(from > 0 ? 1 : 0, -1);
  process.stdout.write(lines.slice(Math.max(0, lines.length - n)).map((l) => l + '\n').join(''));
  const buf = Buffer.allocUnsafe(64 * 1024);
  for (;;) {
    const size = (await h.stat()).size;
    if (size < pos) {
      process.stderr.write(`agentctl: ${file} was cut to its newest part (logMaxBytes); following from its end\n`);
      pos = size;
    }
    while (pos < size) {
      const { bytesRead } = await h.read(buf, 0, Math.min(buf.length, size - pos), pos);
      if (bytesRead === 0) break;
      process.stdout.write(buf.subarray(0, bytesRead));
      pos += bytesRead;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

// How many bytes from the end are read for `n` lines.
function tailBytes(n: number): number {
  return Math.min(64 * 1024 * 1024, Math.max(256 * 1024, n * 4096));
}

function lineCount(v: string): number {
  if (!/^\d{1,9}$/.test(v)) throw new InvalidArgumentError('a number of lines');
  return Number(v);
}

// `agentctl logs <app> [-n N] [-f]`
export function registerLogs(program: Command): void {
  program
    .command('logs <app>')
    .description("the app's output: its unit's journal, or its log file under the detached runner")
    .option('-n, --lines <n>', 'how many of the last lines', lineCount, 100)
    .option('-f, --follow', 'keep printing what the app writes, until interrupted')
    .action(async (app: string, o: { lines: number; follow?: boolean }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      if (o.follow && g.json) throw new StewardError('USAGE', '--json gives the last lines once; it does not go with --follow');
      const paths = hostPaths(clientRoot(g));
      const config = await loadHostConfig(paths.configFile, { isRoot: process.getuid?.() === 0, accounts: systemAccounts, checkOwner: false });
      const source = await logSourceOf(paths, config, app);
      if (o.follow) {
        if (source.kind === 'file') await followFile(source.file, o.lines);
        else process.exitCode = await followJournal(source.unit, o.lines);
        return;
      }
      const lines = await lastLines(source, o.lines);
      if (g.json) return printJson({ app, source: source.kind, ...(source.kind === 'file' ? { file: source.file } : { unit: source.unit }), lines });
      process.stdout.write(lines.map((l) => l + '\n').join(''));
    });
}
