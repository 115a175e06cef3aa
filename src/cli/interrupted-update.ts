// Ctrl-C during `agentctl update`. A client that goes away never cancels an attempt
// (docs/design.md §4, helper/ops/run-transaction.ts): the helper runs it to its end and writes its
// receipt. So an interrupt does not stop the update; agentctl says so, with what the helper says
// of the app right then (the attempt's phase, its hold; printLines escapes the helper's words) and
// how to follow it, then exits 130 as an interrupted command does.
import type { AppStatus } from '../protocol/answers.js';
import type { Progress } from '../protocol/progress.js';
import type { CliContext, GlobalOptions } from './context.js';
import { printLines, when } from './output.js';

// How long the interrupt waits for the helper's status before it says what it knows without it.
const STATUS_WAIT_MS = 2_000;
export const EXIT_INTERRUPTED = 130;

export interface UpdateWatch {
  // Each progress line of the update (its attemptId and phase).
  progress(p: Progress): void;
  // The update's answer came: an interrupt now is an ordinary one.
  stop(): void;
}

export interface WatchedUpdate {
  app: string;
  version: string;
  // The upload, when the release's bytes go over the socket: an interrupt before its end cuts
  // them short, and the helper refuses the attempt (nothing changes).
  upload?: { stream: NodeJS.ReadableStream } | undefined;
}

// Handles SIGINT until stop(): the notice on stderr, then exit 130. A second Ctrl-C leaves at once.
export function watchInterruptedUpdate(ctx: CliContext, opts: GlobalOptions, what: WatchedUpdate): UpdateWatch {
  let attemptId: string | null = null;
  let uploadSent = !what.upload;
  what.upload?.stream.once('end', () => (uploadSent = true));
  const onInterrupt = () => {
    process.once('SIGINT', () => process.exit(EXIT_INTERRUPTED));
    void interruptNotice(ctx, opts, what, { attemptId, uploadSent })
      .catch((err: Error) => [`agentctl: interrupted (${err.message})`])
      .then((lines) => {
        printLines(lines, process.stderr);
        process.exit(EXIT_INTERRUPTED);
      });
  };
  process.once('SIGINT', onInterrupt);
  return {
    progress: (p) => {
      attemptId = p.attemptId;
    },
    stop: () => {
      process.removeListener('SIGINT', onInterrupt);
    },
  };
}

// The lines an interrupt prints: what is true of the update now, and the commands to follow it.
export async function interruptNotice(
  ctx: CliContext,
  opts: GlobalOptions,
  what: WatchedUpdate,
  seen: { attemptId: string | null; uploadSent: boolean },
): Promise<string[]> {
  const agentctl = ['agentctl', ...(opts.root !== undefined ? ['--root', opts.root] : []), ...(opts.socket !== undefined ? ['--socket', opts.socket] : [])].join(' ');
  const app = what.app;
  const update = `the update of ${app} to ${what.version}`;
  if (!seen.uploadSent) {
    return [
      `agentctl: interrupted while the release was still being sent to the helper: ${update} stops there, and the helper changes nothing.`,
      `  \`${agentctl} status ${app}\` shows ${app} as it was.`,
    ];
  }
  const status = await appStatusWithin(ctx, app, STATUS_WAIT_MS);
  const running = status?.running && status.running.op === 'update' && (seen.attemptId === null || status.running.attemptId === seen.attemptId) ? status.running : null;
  const lines: string[] = [];
  if (running) {
    lines.push(`agentctl: interrupted, but ${update} goes on in steward-helper (attempt ${running.attemptId}, now at ${running.phase}): it ends active, rolled back or failed on its own.`);
  } else if (status) {
    lines.push(`agentctl: interrupted; no update of ${app} is running now: it ended before the interrupt${seen.attemptId ? ` (attempt ${seen.attemptId})` : ', or had not started'}.`);
  } else {
    lines.push(`agentctl: interrupted; ${update} goes on in steward-helper if it reached it (a client that leaves never cancels an attempt); the helper did not answer status within ${STATUS_WAIT_MS} ms.`);
  }
  lines.push(`  follow it: \`${agentctl} status ${app}\`; its outcome: \`${agentctl} receipts ${app}\``);
  if (status?.hold) {
    lines.push(`  ${app} is held (by ${status.hold.by} since ${when(status.hold.at)}): the control plane changes it no more until \`${agentctl} release-hold ${app}\` (as root).`);
  } else if (ctx.socket.kind === 'admin' && running) {
    lines.push(`  once its release is staged, this update holds ${app} (an update over admin.sock does): the control plane then changes it no more until \`${agentctl} release-hold ${app}\` (as root).`);
  } else if (ctx.socket.kind === 'helper') {
    lines.push(`  over helper.sock an update puts no hold on ${app}.`);
  }
  return lines;
}

// The app's status, or null when the helper does not answer within `ms`.
async function appStatusWithin(ctx: CliContext, app: string, ms: number): Promise<AppStatus | null> {
  const asked = ctx.helper.status({ app }, { timeoutMs: ms }).then(
    (r) => r.apps.find((a) => a.name === app) ?? null,
    () => null,
  );
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  try {
    return await Promise.race([asked, late]);
  } finally {
    clearTimeout(timer);
  }
}
