import type { Command } from 'commander';
import { hostPaths } from '../../core/paths.js';
import { StewardError } from '../../core/errors.js';
import { CLAIMABLE_KEY_RE, parseLabels } from '../../core/labels.js';
import type { HostConfig } from '../../core/config-schema.js';
import { checkControlPlaneUrl } from '../../agent/control-plane-url.js';
import { controlPlaneListProblem, MAX_CONTROL_PLANE_URLS } from '../../core/control-plane-urls.js';
import { enrollHostname } from '../../agent/enroll.js';
import { agentIdentity, prepareAgentDir, spawnEnrollNode } from '../../agent/spawn-enroll-node.js';
import { loadHostConfig } from '../../host/config.js';
import { loadOrCreateHelperKey } from '../../host/helper-key.js';
import { ensureDir, writeJsonAtomic } from '../../platform/fs-atomic.js';
import { DOMAINS, signPayloadBytes } from '../../platform/keys.js';
import path from 'node:path';
import { Readable } from 'node:stream';
import { checkTrustRoot } from '../../platform/trust/root-check.js';
import { readFileNoFollow } from '../../platform/fs-atomic.js';
import type { TrustAnswer } from '../../protocol/answers.js';
import { TRUST_ROOT_MAX_BYTES } from '../../protocol/schemas.js';
import { cliContext, clientRoot, type GlobalOptions } from '../context.js';
import { printJson, printLines } from '../output.js';

interface EnrollOptions {
  controlPlane: string[];
  token: string;
  force?: boolean;
  label: string[];
  hostname?: string;
  trustRoot?: string;
}

// `agentctl enroll --control-plane URL [--control-plane URL]... --token T [--force]` (docs/design.md §6,
// §13), as root at install time.
export function registerEnroll(program: Command): void {
  program
    .command('enroll')
    .description('enroll this node with a control plane: make the node key (as the agent user) and record the nodeId')
    .requiredOption(
      '--control-plane <url>',
      `the control plane base URL (https, or http to a loopback host); repeat it, up to ${MAX_CONTROL_PLANE_URLS} times, for URLs the agent tries in order`,
      (v: string, acc: string[] | undefined) => [...(acc ?? []), v],
    )
    .requiredOption('--token <token>', 'a single-use enrollment token from the control plane')
    .option('--force', 'enroll again although this node is enrolled: a new node key and a new nodeId')
    .option('--hostname <name>', 'the host name this node enrolls under (an RFC 1123 host name); default: the kernel\'s')
    .option('--trust-root <file>', "the fleet's TUF root metadata (steward-control trust): from then on updates are trusted through TUF and the director (docs/trust.md), not per-app release keys")
    .option('--label <k=v>', 'a label this node proposes (repeatable); the control plane keeps it as claimed.<k>, which selects nothing unless named', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .action(async (o: EnrollOptions, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const labels = parseLabels(o.label, '--label');
      for (const k of Object.keys(labels)) {
        if (!CLAIMABLE_KEY_RE.test(k)) throw new StewardError('USAGE', `--label ${k}: a proposed key is at most 55 characters (it is kept as claimed.${k})`);
      }
      // Checked before anything is made: a name the control plane would refuse is refused here.
      const hostname = enrollHostname(o.hostname);
      const paths = hostPaths(clientRoot(g));
      const config = await readConfigIfAny(paths.configFile, paths.root);
      const cp = config?.controlPlane;
      const insecure = cp?.insecure === true;
      const problem = controlPlaneListProblem(o.controlPlane);
      if (problem) throw new StewardError('USAGE', `--control-plane: ${problem}`);
      for (const url of o.controlPlane) {
        try {
          checkControlPlaneUrl(url, insecure);
        } catch (err) {
          // The URL is the command line's: a usage mistake (exit 2), not a broken host config.
          throw new StewardError('USAGE', `--control-plane: ${(err as Error).message}`, { cause: err });
        }
      }
      // The TUF root first: a file that cannot be one refuses the enrollment before anything is made.
      const trust = o.trustRoot !== undefined ? await setTrustRoot(g, o.trustRoot) : null;
      // The helper key exists before enrollment, as the helper would make it, so the control plane
      // learns the key every receipt of this node will verify under.
      const helperKey = await loadOrCreateHelperKey(paths);
      const who = await agentIdentity(paths);
      await prepareAgentDir(paths, who);
      // The helper key proves itself to the control plane: it signs the very payload the node
      // key signs (docs/design.md §6, issue 15), so no node can enroll with another host's helper key.
      const signPayload = (payload: Buffer) => signPayloadBytes(DOMAINS.enrollHelper, payload, helperKey.privateKey);
      const result = await spawnEnrollNode(paths, who, {
        controlPlaneUrls: o.controlPlane,
        token: o.token,
        helperPublicKey: helperKey.publicKey.export({ format: 'pem', type: 'spki' }).toString(),
        ...(cp?.caFile ? { caFile: cp.caFile } : {}),
        ...(insecure ? { insecure } : {}),
        ...(o.force ? { force: true } : {}),
        ...(Object.keys(labels).length ? { labels } : {}),
        hostname,
      }, signPayload);
      // state/node.json is root's: the helper puts this nodeId in every receipt it signs.
      await ensureDir(paths.stateDir, 0o700);
      await writeJsonAtomic(paths.nodeState, { schemaVersion: 1, nodeId: result.nodeId }, 0o600);
      const out = { ok: true, nodeId: result.nodeId, controlPlaneUrl: result.controlPlaneUrl, controlPlaneUrls: result.controlPlaneUrls, nodeKeyId: result.nodeKeyId, helperKeyId: helperKey.keyId, heartbeatSeconds: result.heartbeatSeconds, ...(trust ? { trust } : {}) };
      if (g.json) printJson(out);
      else {
        printLines([
          `enrolled node ${result.nodeId} with ${result.controlPlaneUrl}`,
          ...(result.controlPlaneUrls.length > 1 ? [`  the agent tries, in order: ${result.controlPlaneUrls.join(' ')}`] : []),
          `  node key ${result.nodeKeyId} (kept by the agent), helper key ${helperKey.keyId}, heartbeat every ${result.heartbeatSeconds} s`,
          ...(trust ? [`  trusts TUF root v${trust.rootVersion} (the metadata comes with the agent's next heartbeat)`] : []),
          '  start the agent: systemctl enable --now steward-agent',
        ]);
      }
    });
}

// `agentctl trust set-root FILE` (docs/design.md §21), as root: the fleet's TUF root becomes the
// host's trust, through admin.sock (the helper checks it again, and refuses a version below the
// root it trusts). A file that is no root whose own keys meet its threshold is refused here first.
export function registerTrust(program: Command): void {
  const trust = program.command('trust').description("how this host trusts releases: the fleet's TUF root (docs/trust.md)");
  trust
    .command('set-root <file>')
    .description("trust the fleet's TUF root metadata FILE (root only): updates then need the director's directive and the app delegation's targets")
    .action(async (file: string, _o: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const a = await setTrustRoot(g, file);
      if (g.json) printJson({ ok: true, ...a });
      else printLines([`this host trusts TUF root v${a.rootVersion}${a.timestampVersion !== undefined ? ` (timestamp v${a.timestampVersion})` : ''}: updates are trusted through TUF from now on`]);
    });
}

// Reads FILE, checks it as a TUF root, and hands it to the helper over admin.sock.
async function setTrustRoot(g: GlobalOptions, file: string): Promise<TrustAnswer> {
  let bytes: Buffer | null;
  try {
    bytes = await readFileNoFollow(path.resolve(file), TRUST_ROOT_MAX_BYTES);
  } catch (err) {
    throw new StewardError('TRUST_INVALID', `--trust-root ${file}: ${(err as Error).message} (a root is at most ${TRUST_ROOT_MAX_BYTES} bytes, not a symlink)`, { cause: err });
  }
  if (!bytes) throw new StewardError('USAGE', `${file} does not exist`);
  const r = checkTrustRoot(bytes);
  if ('why' in r) throw new StewardError('TRUST_INVALID', `${file} is not a usable TUF root: ${r.why}`);
  const ctx = await cliContext(g);
  if (ctx.socket.kind !== 'admin') throw new StewardError('NEEDS_ROOT', 'setting the TUF root is root\'s: run as root (it goes through admin.sock)');
  const root = bytes;
  return ctx.helper.trustSetRoot({ upload: root.length }, { upload: { size: root.length, stream: Readable.from([root]) } });
}

// The host config when there is one (for controlPlane.caFile and insecure); enrollment does
// not need it otherwise. A config that exists but does not validate, or that breaks the trust
// rule (root reads it), is an error. The apps' accounts are the helper's to check.
async function readConfigIfAny(file: string, root: string): Promise<HostConfig | null> {
  try {
    return await loadHostConfig(file, { isRoot: false, accounts: { user: async () => null, group: async () => null }, root });
  } catch (err) {
    if (err instanceof StewardError && /does not exist/.test(err.message)) return null;
    throw err;
  }
}

// `enroll` and `trust`: one module, one runner (src/cli/main.ts).
export function registerEnrollAndTrust(program: Command): void {
  registerEnroll(program);
  registerTrust(program);
}
