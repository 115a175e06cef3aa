import { readFileSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import { printJson, table, when } from '../../../cli/output.js';
import { StewardError } from '../../../core/errors.js';
import { jsonOf } from '../context.js';
import { invoke } from '../invoke.js';

// The operations' code (zod, their schemas), imported when a subcommand runs: --help and the
// parsing of the command line register the commands without it.
const ops = () => import('../../operations/hook-ops.js');

const EVENTS_HELP = 'run.started, run.paused, run.resumed, run.halted, run.succeeded, run.stopped, target.set, target.converged, target.behind, or * for all';

// A secret file's text: read here, on the operator's side, so that --server sends the secret
// over the admin API's TLS and the server never opens a file an operator names.
function readSecretFile(file: string): string {
  try {
    if (!statSync(file).isFile()) throw new StewardError('USAGE', `--secret-file ${file} is not a regular file`);
    const bytes = readFileSync(file);
    if (bytes.length > 4096) throw new StewardError('USAGE', `--secret-file ${file} holds ${bytes.length} bytes; a hook's secret is one line of at most 4096`);
    return bytes.toString('utf8');
  } catch (err) {
    if (err instanceof StewardError) throw err;
    throw new StewardError('NOT_FOUND', `cannot read --secret-file ${file}: ${(err as Error).message}`, { cause: err });
  }
}

// `steward-control hook add NAME --url URL --events LIST [--secret-file F]`, `hook list`,
// `hook remove NAME`, `hook test NAME` (docs/control-plane.md, "Telling people: hooks").
export function registerHook(program: Command): void {
  const hook = program.command('hook').description('tell people: post run and target events (CloudEvents, signed) to a URL');
  hook
    .command('add <name>')
    .description("add a hook: the events named are posted to URL as CloudEvents 1.0 JSON, signed with HMAC-SHA256 (header Steward-Signature), at least once, with the event's id as idempotency id")
    .requiredOption('--url <url>', 'where to post: https://... (http:// only to a loopback host, for tests and local relays); redirects are never followed')
    .requiredOption('--events <list>', `a comma-separated list of: ${EVENTS_HELP}`)
    .option('--secret-file <file>', 'a file holding the signing secret (one line, at least 16 characters); without it a secret is made and printed once')
    .action(async (name: string, o: { url: string; events: string; secretFile?: string }, cmd: Command) => {
      const secret = o.secretFile === undefined ? undefined : readSecretFile(o.secretFile);
      const r = await invoke(cmd, (await ops()).hookAdd, { name, url: o.url, events: o.events, secret });
      if (jsonOf(cmd)) return printJson(r);
      if (r.secret !== undefined) {
        process.stdout.write(r.secret + '\n');
        process.stderr.write(`steward-control: hook ${r.name} added, posting ${r.events.join(', ')} to ${r.url}; the signing secret above is shown once: give it to the receiver\n`);
      } else {
        process.stdout.write(`hook ${r.name} added: ${r.events.join(', ')} to ${r.url}\n`);
      }
    });
  hook
    .command('list')
    .description('every hook: URL, events, deliveries queued, delivered and given up, the last failure (never a secret)')
    .action(async (_o: unknown, cmd: Command) => {
      const out = await invoke(cmd, (await ops()).hookList, {});
      if (jsonOf(cmd)) return printJson(out);
      const rows = [['NAME', 'URL', 'EVENTS', 'QUEUED', 'DELIVERED', 'GAVE UP', 'LAST TRY', 'LAST FAILURE']];
      for (const h of out.hooks) rows.push([h.name, h.url, h.events.join(','), String(h.pending), String(h.delivered), String(h.gaveUp), when(h.lastAttemptAt), h.lastError ?? '-']);
      process.stdout.write(out.hooks.length ? table(rows) : 'no hooks (`steward-control hook add NAME --url URL --events run.halted,...`)\n');
    });
  hook
    .command('remove <name>')
    .description('remove a hook; the events still queued for it are dropped (the audit entry says how many)')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const r = await invoke(cmd, (await ops()).hookRemove, { name });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`removed ${r.removed}${r.pendingDropped ? `; ${r.pendingDropped} queued event${r.pendingDropped === 1 ? '' : 's'} dropped` : ''}\n`);
    });
  hook
    .command('test <name>')
    .description("post a test event (dev.steward.hook.test) to the hook now, signed as any other, and print the receiver's answer; exit 1 when it is not 2xx")
    .option('--timeout <seconds>', 'how long to wait for the answer (1 to 60)', '10')
    .action(async (name: string, o: { timeout: string }, cmd: Command) => {
      const r = await invoke(cmd, (await ops()).hookTest, { name, timeout: o.timeout });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`hook ${r.hook}: ${r.url} ${r.message} in ${r.ms} ms (event ${r.eventId})\n`);
    });
}
