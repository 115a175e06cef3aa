import type { Command } from 'commander';
import { DEFAULT_MAX_DOWNLOADS, DEFAULT_MIN_DOWNLOAD_RATE } from '../../server/download-limits.js';
import { DEFAULT_HEARTBEAT_SECONDS } from '../../store/settings.js';
import { DEFAULT_MAX_WAITS } from '../../wakeups/wait-registry.js';
import type { ServeFlags } from './serve-run.js';

// `steward-control serve --listen HOST:PORT [--tls-cert F --tls-key F] [--heartbeat-seconds N] [--insecure]
// [--admin-listen HOST:PORT [--trusted-proxy ADDR]...] [--metrics-listen HOST:PORT] [--max-downloads N]
// [--anonymous-downloads N] [--download-min-rate BYTES] [--download-rate-window S] [--max-waits N]
// [--hook-timeout S]`
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve enrollment, heartbeats and artifacts; advance rollouts')
    .requiredOption('--listen <host:port>', 'address to listen on (port 0: any free port)')
    .option('--tls-cert <file>', 'TLS certificate (PEM)')
    .option('--tls-key <file>', 'TLS private key (PEM)')
    .option('--tls-ticket-keys <file>', "48 secret bytes (raw, or base64) sealing TLS session tickets, the same file on every instance behind one address so that agents resume their sessions on any of them (default: each process makes its own); mode 0600 or 0640")
    .option('--heartbeat-seconds <n>', 'heartbeat interval nodes are told', String(DEFAULT_HEARTBEAT_SECONDS))
    .option('--insecure', 'allow plain http on a non-loopback address')
    .option('--init', 'create the database when it does not exist (as `steward-control init`)')
    // The admin API and dashboard sessions (docs/design.md §12).
    .option('--admin-listen <host:port>', 'serve the admin API (/v1/admin/) and dashboard sessions (/ui/) here; the same address as --listen shares its listener')
    .option('--trusted-proxy <addr>', 'a proxy (address or CIDR) whose X-Forwarded-For and X-Forwarded-Proto are believed (repeatable)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    // Metrics (docs/design.md §12): Prometheus text at /metrics, with /healthz and /readyz, plain http.
    .option('--metrics-listen <host:port>', 'serve Prometheus metrics (/metrics), /healthz and /readyz on this address (plain http, no auth)')
    // docs/design.md §13: a batch of a large fleet queues for its tarballs instead of saturating the link.
    .option('--max-downloads <n>', 'artifact downloads this instance sends at once; more are answered 503 with Retry-After, which helpers wait out', String(DEFAULT_MAX_DOWNLOADS))
    // Issue 31 item 11: slots for enrolled nodes that anonymous readers cannot take, and a floor on speed.
    .option('--anonymous-downloads <n>', 'of those, downloads sent at once without a node\'s or operator\'s credential (helpers from before download credentials send none); 0 refuses them (default: an eighth of --max-downloads)')
    .option('--download-min-rate <bytes>', 'cut a download that moves fewer bytes a second than this over --download-rate-window, freeing its slot; 0: never', String(DEFAULT_MIN_DOWNLOAD_RATE.bytesPerSecond))
    .option('--download-rate-window <s>', 'the window of --download-min-rate, in seconds', String(DEFAULT_MIN_DOWNLOAD_RATE.windowMs / 1000))
    // docs/design.md §18: nodes' wake-up waits held at once (each an open connection).
    .option('--max-waits <n>', 'held heartbeats and wake-up waits (GET /v1/wait) this instance holds at once, each an open connection; past it they are answered at once and those nodes hear of changes at their next heartbeat', String(DEFAULT_MAX_WAITS))
    // docs/design.md §19: the hooks' deliverer (their receivers' https trusts --ca-file beside Node's CAs).
    .option('--hook-timeout <s>', "how long a hook's receiver has to answer one delivery (1 to 60); a delivery is leased to this instance for twice that and 5 s more", '10')
    // Why imported here: --help and the other commands load none of the server's code.
    .action(async (o: ServeFlags, cmd: Command) => (await import('./serve-run.js')).serve(o, cmd));
}
