// steward-agent: the composition root (docs/design.md §10). `steward-agent [--root DIR] [--config FILE]`
// heartbeats in the foreground until SIGTERM; `steward-agent enroll-node` is the agent user's
// half of `agentctl enroll`, reading its request on stdin and printing one JSON line.
import { createInterface } from 'node:readline';
import { Command, CommanderError } from 'commander';
import { StewardError, toStewardError } from '../core/errors.js';
import { formatIssues } from '../core/format-issues.js';
import type { HostConfig } from '../core/config-schema.js';
import { hostPaths } from '../core/paths.js';
import { acceptsFile } from '../core/control-plane-accepts.js';
import { AcceptsWriter } from './accepts-writer.js';
import { relayMarkFile } from '../core/relay-mark.js';
import { systemClock } from '../platform/clock.js';
import { readFileNoFollow } from '../platform/fs-atomic.js';
import { keyIdOf, parsePublicKey } from '../platform/keys.js';
import { acquireHelperLock, type HelperLock } from '../platform/lock.js';
import { enableDefaultLogs, logger } from '../platform/log.js';
import { readOwnVersion } from '../platform/own-version.js';
import { readBootId } from '../platform/proc-identity.js';
import { resolveRootPrefix } from '../platform/root-prefix.js';
import { systemAccounts } from '../platform/users.js';
import { loadHostConfig } from '../host/config.js';
import { ActedStore } from './acted-store.js';
import { agentFiles, ensureAgentDir, readEnrollment, readNodeKey } from './agent-files.js';
import { chooseControlPlaneUrls, readControlPlaneChoiceFile, recordAnswered } from './control-plane-choice.js';
import { createControlPlaneClient } from './control-plane-client.js';
import { isInsecureUrl } from './control-plane-url.js';
import type { EnrollResult } from './enroll.js';
import { HeartbeatLoop } from './heartbeat-loop.js';
import { AppScrapes } from './metrics/app-scrapes.js';
import { createWakeSleep } from './wake-wait.js';
import { WAIT_AUTH_TTL_MS, waitAuthorization } from '../platform/wait-auth.js';
import { fetchTrustBundle } from './trust-bundle.js';
import { socketHelper } from './helper-port.js';
import { Outbox } from './outbox.js';
import { SeqStore } from './seq-store.js';

const log = logger('agent:main');
const hbLog = logger('agent:heartbeat');

interface AgentOptions {
  root?: string;
  config?: string;
}

// The steward-agent program, each action setting the exit code through `exit` (its man page is
// made from it too).
export function agentProgram(exit: (code: number) => void = () => {}): Command {
  const program = new Command('steward-agent')
    .description('heartbeat to the control plane, relay the helper receipts, converge apps')
    .option('--root <dir>', 'root prefix of the host layout (tests, demos)')
    .option('--config <file>', 'host config (default <root>/etc/steward/steward.json)')
    .version(readOwnVersion(), '-V, --version', 'print the steward version')
    .exitOverride()
    .action(async (o: AgentOptions) => {
      exit(await runAgent(o));
    });
  program
    .command('enroll-node', { hidden: true })
    .description('internal: the agent user half of `agentctl enroll` (request on stdin)')
    .action(async (_o: unknown, cmd: Command) => {
      exit(await runEnrollNode(cmd.optsWithGlobals<AgentOptions>()));
    });
  return program;
}

// Runs steward-agent with `argv` and returns its exit code.
export async function main(argv: string[]): Promise<number> {
  enableDefaultLogs();
  let code = 0;
  const program = agentProgram((c) => {
    code = c;
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    // --help and --version are done; anything else is a usage mistake.
    return err instanceof CommanderError && err.exitCode === 0 ? 0 : 2;
  }
  return code;
}

function fail(err: unknown): number {
  const e = err instanceof StewardError ? err : toStewardError(err, 'INTERNAL');
  process.stderr.write(`steward-agent: ${e.code}: ${e.message}\n`);
  return 1;
}

async function loadContext(o: AgentOptions): Promise<{ root: string; config: HostConfig }> {
  const isRoot = process.getuid?.() === 0;
  const root = await resolveRootPrefix({ flag: o.root, env: process.env.STEWARD_ROOT, isRoot });
  if (isRoot && root === '') {
    // docs/design.md §1: the agent is the unprivileged half; as root, a compromise of it would be root's.
    throw new StewardError('CONFIG_INVALID', 'steward-agent runs as user steward, not root (systemd: User=steward); --root DIR is for tests and demos');
  }
  const config = await loadHostConfig(o.config ?? hostPaths(root).configFile, { isRoot, accounts: systemAccounts });
  return { root, config };
}

function exitOnCompromised(err: Error): void {
  // Two agents on one folder would reuse seqs and act twice on an attempt: stop at once.
  process.stderr.write(`steward-agent: the agent folder lock was compromised (${err.message}); exiting\n`);
  process.exit(1);
}

async function runAgent(o: AgentOptions): Promise<number> {
  let lock: HelperLock | null = null;
  try {
    const { root, config } = await loadContext(o);
    const paths = hostPaths(root);
    const files = agentFiles(paths);
    await ensureAgentDir(files);
    lock = await acquireHelperLock(files.lock, { holder: 'steward-agent', lockedCode: 'AGENT_LOCKED', onCompromised: exitOnCompromised });
    const enrollment = await readEnrollment(files);
    if (!enrollment) throw new StewardError('NOT_ENROLLED', `${files.enrollment} does not exist: run \`agentctl enroll --control-plane URL --token T\` first`);
    const nodeKey = await readNodeKey(files);
    if (keyIdOf(nodeKey) !== enrollment.nodeKeyId) {
      throw new StewardError('STATE_INVALID', `${files.nodeKey} has keyId ${keyIdOf(nodeKey)}, not the enrolled ${enrollment.nodeKeyId}; enroll again with --force`);
    }
    const cp = config.controlPlane;
    const cpFile = await readControlPlaneChoiceFile(files, log);
    const choice = chooseControlPlaneUrls(cp, cpFile.file, enrollment.controlPlaneUrl);
    const client = await createControlPlaneClient(
      { url: choice.urls, caFile: cp?.caFile, insecure: cp?.insecure },
      { startAt: choice.startAt, onAnswered: recordAnswered(files, cpFile, () => systemClock.now(), hbLog), log: hbLog },
    );
    for (const u of client.urls.filter(isInsecureUrl)) {
      log('WARNING: controlPlane.insecure is set: heartbeats go over plain http to %s, readable and forgeable on the way', u.host);
    }
    // The helper keeps every receipt above the relay mark: publish it before the first heartbeat.
    const outbox = await Outbox.open(files.outbox, { markFile: relayMarkFile(paths) });
    await outbox.publishRelayMark();
    const loop = new HeartbeatLoop({
      clock: systemClock,
      random: Math.random,
      helper: socketHelper(paths.helperSock),
      controlPlane: client,
      seq: await SeqStore.open(files.seq),
      outbox,
      acted: await ActedStore.open(files.acted),
      accepts: new AcceptsWriter(acceptsFile(paths), agentVersion(), hbLog),
      nodeId: enrollment.nodeId,
      nodeKey,
      // The control plane the agent talks to now: the release URLs a catalog writes are its own.
      downloadOrigin: () => client.url.origin,
      // The URL that answered last first: the instance most likely up.
      downloadMirrors: () => [client.url.href, ...client.urls.map((u) => u.href).filter((h) => h !== client.url.href)],
      loadHelperKey: async () => {
        const pem = await readFileNoFollow(paths.helperPub, 16 * 1024);
        if (!pem) throw new StewardError('STATE_INVALID', `${paths.helperPub} does not exist (has steward-helper ever started?)`);
        return parsePublicKey(pem);
      },
      bootId: (await readBootId()) || 'unknown',
      agentVersion: agentVersion(),
      heartbeatSeconds: enrollment.heartbeatSeconds,
      metrics: new AppScrapes({ now: () => systemClock.now() }),
      wake: createWakeSleep({
        clock: systemClock,
        random: Math.random,
        get: (request, signal) => client.get(request, signal),
        authorization: () => waitAuthorization(enrollment.nodeId, systemClock.now() + WAIT_AUTH_TTL_MS, nodeKey),
        log: hbLog,
      }),
      trust: {
        fetchBundle: (root, signal) =>
          fetchTrustBundle(
            { get: (request, s) => client.get(request, s), authorization: () => waitAuthorization(enrollment.nodeId, systemClock.now() + WAIT_AUTH_TTL_MS, nodeKey), ...(cp?.trustBundleTimeoutMs !== undefined ? { timeoutMs: cp.trustBundleTimeoutMs } : {}) },
            root,
            signal,
          ),
      },
      log: hbLog,
    });
    const stop = new AbortController();
    const onSignal = (sig: string) => {
      log('stopping on %s', sig);
      stop.abort(new Error(sig));
    };
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
    log('started nodeId=%s controlPlane=%s root=%s pid=%d', enrollment.nodeId, client.url.origin, root || '/', process.pid);
    if (client.urls.length > 1) log('control plane URLs (%s): %s', choice.from, client.urls.map((u) => u.href).join(' '));
    await loop.run(stop.signal);
    client.close();
    log('stopped');
    return 0;
  } catch (err) {
    return fail(err);
  } finally {
    await lock?.release().catch(() => {});
  }
}

function agentVersion(): string {
  const v = readOwnVersion();
  return /^\d+\.\d+\.\d+/.test(v) ? v : '0.0.0';
}

// The agent user's half of `agentctl enroll`, talking JSON lines with root (spawn-enroll-node.ts):
// the request on stdin; `{prove}` out and root's `{helperSig}` back; the result out, last.
async function runEnrollNode(o: AgentOptions): Promise<number> {
  const print = (r: unknown) => process.stdout.write(JSON.stringify(r) + '\n');
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
  const nextLine = async (what: string): Promise<unknown> => {
    const line = await lines.next();
    if (line.done) throw new StewardError('USAGE', `enroll-node: stdin ended before ${what}`);
    try {
      return JSON.parse(line.value);
    } catch (err) {
      throw new StewardError('USAGE', `enroll-node: ${what} is not JSON: ${(err as Error).message}`);
    }
  };
  try {
    const isRoot = process.getuid?.() === 0;
    const root = await resolveRootPrefix({ flag: o.root, env: process.env.STEWARD_ROOT, isRoot });
    // Loaded here only: enrollment runs once (the agent user's half, never the daemon).
    const { enrollNode, enrollProveAnswerSchema, enrollRequestSchema } = await import('./enroll.js');
    const asked = enrollRequestSchema.safeParse(await nextLine('the request'));
    if (!asked.success) throw new StewardError('USAGE', `enroll-node reads one JSON request on stdin: ${formatIssues(asked.error.issues)}`);
    const req = asked.data;
    const proveHelperKey = async (payload: Buffer): Promise<string> => {
      print({ prove: payload.toString('base64') });
      const answer = enrollProveAnswerSchema.safeParse(await nextLine("root's helper key signature"));
      if (!answer.success) throw new StewardError('INTERNAL', "enroll-node: root's answer to prove is not {helperSig} or {error}");
      if ('error' in answer.data) throw new StewardError('INTERNAL', answer.data.error.message);
      return answer.data.helperSig;
    };
    const client = await createControlPlaneClient({ url: req.controlPlaneUrls, caFile: req.caFile, insecure: req.insecure }, { log: logger('agent:enroll') });
    const result = await enrollNode(req, { paths: hostPaths(root), client, clock: systemClock, log: logger('agent:enroll'), onCompromised: exitOnCompromised, proveHelperKey }).finally(() => client.close());
    print(result satisfies EnrollResult);
    return 0;
  } catch (err) {
    const e = err instanceof StewardError ? err : toStewardError(err, 'INTERNAL');
    print({ ok: false, error: { code: e.code, message: e.message } } satisfies EnrollResult);
    return 1;
  } finally {
    // Why destroy: a closed readline leaves stdin open, and root keeps its end open until this
    // process exits (it may still have to answer a prove), so neither would ever go first.
    await lines.return?.();
    process.stdin.destroy();
  }
}
