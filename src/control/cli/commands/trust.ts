import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { printJson } from '../../../cli/output.js';
import { jsonOf } from '../context.js';
import { parsePositiveInt } from '../parse-options.js';

// What the subcommands run (@tufjs/models, the builders, the admin client), imported when one
// runs: --help and the parsing of the command line register the commands without it.
const lib = async () => {
  const [api, offline, build, keys] = await Promise.all([import('../trust/api.js'), import('../trust/offline.js'), import('../../../core/trust/build.js'), import('../../../platform/trust/tuf-keys.js')]);
  return { ...api, ...offline, ...build, ...keys };
};

const ONLINE_ROLES = ['snapshot', 'timestamp', 'director'] as const;

// The roles of --new-online: each one of ONLINE_ROLES, once.
function newOnlineRoles(text: string): string[] {
  const roles = text.split(',').map((r) => r.trim());
  for (const r of roles) if (!(ONLINE_ROLES as readonly string[]).includes(r)) throw new StewardError('USAGE', `--new-online ${JSON.stringify(r)} is not one of ${ONLINE_ROLES.join(', ')}`);
  if (new Set(roles).size !== roles.length) throw new StewardError('USAGE', `--new-online names a role twice: ${text}`);
  return roles;
}

const out = (lines: string[]) => process.stdout.write(lines.map((l) => l + '\n').join(''));

// The command a key holder runs to sign what is pending, against the same server.
function signCommand(server: URL, what = '<your root key>.pem'): string {
  return `steward-control --server ${server.origin}${server.pathname.replace(/\/+$/, '')} trust sign-root --key ${what}`;
}

function expiresDaysOf(text: string): number {
  return parsePositiveInt(text, '--expires-days', 3650);
}

// `steward-control trust init|sign-root|rotate|delegate|status` (docs/trust.md, "TUF: offline keys")
export function registerTrust(program: Command): void {
  const trust = program
    .command('trust')
    .description("the fleet's TUF repository: offline root and app keys sign on this machine, through --server; only public keys and signatures are sent");
  trust
    .command('init')
    .description('make root v1 and the top-level targets v1 from the offline root keys (their .pub files) and the server\'s online keys, and leave them pending until a threshold of root key holders signs them (trust sign-root)')
    .requiredOption('--keys <files>', 'the root keys: comma-separated Ed25519 public key PEM files (a.pub,b.pub,c.pub)')
    .option('--threshold <n>', 'how many root keys must sign a root (default: 2, or 1 with one key)')
    .option('--targets-keys <files>', 'the top-level targets keys, if not the root keys')
    .option('--targets-threshold <n>', 'how many targets keys must sign the top-level targets (default: the root threshold with the root keys, else 2)')
    .option('--expires-days <n>', 'how long root and targets hold, in days', '365')
    .option('--replace', 'replace a root and targets already pending (their signatures are lost)')
    .action(async (o: { keys: string; threshold?: string; targetsKeys?: string; targetsThreshold?: string; expiresDays: string; replace?: boolean }, cmd: Command) => {
      const L = await lib();
      const rootKeys = L.readPublicKeys(o.keys, '--keys');
      const threshold = L.checkThreshold(o.threshold === undefined ? Math.min(2, rootKeys.length) : parsePositiveInt(o.threshold, '--threshold', 1000), rootKeys.length, '--threshold', '--keys');
      const targetsKeys = o.targetsKeys ? L.readPublicKeys(o.targetsKeys, '--targets-keys') : null;
      const targetsThreshold = targetsKeys
        ? L.checkThreshold(o.targetsThreshold === undefined ? Math.min(2, targetsKeys.length) : parsePositiveInt(o.targetsThreshold, '--targets-threshold', 1000), targetsKeys.length, '--targets-threshold', '--targets-keys')
        : o.targetsThreshold === undefined
          ? threshold
          : L.checkThreshold(parsePositiveInt(o.targetsThreshold, '--targets-threshold', 1000), rootKeys.length, '--targets-threshold', '--keys');
      const expires = L.daysFromNow(expiresDaysOf(o.expiresDays));
      const api = new L.TrustApi(L.trustTarget(cmd));
      const status = await api.status();
      const had = status.root?.signed.version ?? (status.raw['root'] as { version?: number } | null | undefined)?.version;
      if (had !== undefined) throw new StewardError('USAGE', `this fleet already has root v${had}: change its keys with \`steward-control trust rotate\`, not init`);
      // init builds on nothing the server holds: a summary of a pending root is enough to refuse.
      const pendingRoot = status.pending.root?.signed.version ?? ((status.raw['pending'] as { root?: { version?: number } | null } | undefined)?.root?.version);
      if (pendingRoot !== undefined && !o.replace) {
        const counts = status.pending.root ? ` (${L.countLines(L.countSignatures(status.pending.root, L.signerGroups(status, 'root'))).join('; ')})` : '';
        throw new StewardError('USAGE', `root v${pendingRoot} is already pending${counts}: sign it with \`trust sign-root\`, or pass --replace to start over`);
      }
      const online = await api.onlineKeys([], status.pending.root);
      const root = L.newRoot({
        rootKeys: rootKeys.map((k) => k.key),
        threshold,
        ...(targetsKeys ? { targetsKeys: targetsKeys.map((k) => k.key) } : {}),
        targetsThreshold,
        snapshotKey: online.snapshot,
        timestampKey: online.timestamp,
        directorKey: online.director,
        expires,
      });
      const targets = L.newTopTargets({ expires });
      await api.putPending('root', L.metadataBytes(root));
      // A server that takes the targets only once a root is published (it checks them under the
      // root's targets role) gets them from the sign-root that publishes root v1.
      const targetsPending = await api.putPending('targets', L.metadataBytes(targets)).then(
        () => true,
        (err: unknown) => {
          if (!(err instanceof StewardError && err.code === 'USAGE' && /root first/.test(err.message))) throw err;
          return false;
        },
      );
      const signers = rootKeys.map((k) => ({ file: k.file, keyid: k.key.keyID }));
      const next = signCommand(api.target.url);
      if (jsonOf(cmd)) {
        return printJson({
          pending: { root: { version: 1, threshold, keyids: root.signed.roles['root']!.keyIDs, expires: root.signed.expires }, targets: targetsPending ? { version: 1, threshold: targetsThreshold, keyids: root.signed.roles['targets']!.keyIDs, expires: targets.signed.expires } : null },
          online: { snapshot: online.snapshot.keyID, timestamp: online.timestamp.keyID, director: online.director.keyID },
          signers,
          next,
        });
      }
      out([
        'pending (not yet trusted by anything):',
        ...L.describeRoot(root).map((l) => '  ' + l),
        ...(targetsPending ? L.describeTargets(targets).map((l) => '  ' + l) : ['  (the empty top-level targets v1 goes pending when root v1 is published, by the sign-root that publishes it)']),
        `next: ${threshold} of these root key holders sign, each on the machine that holds their private key:`,
        ...signers.map((s) => `  ${s.keyid}  (${s.file})`),
        `  ${next}`,
        ...(targetsKeys ? [`and ${targetsThreshold} of the targets key holders sign the targets the same way (${targetsKeys.map((k) => k.key.keyID).join(', ')})`] : []),
        'root v1 and targets v1 are published once their thresholds are met; then `steward-control trust delegate APP --keys ...` gives each app its keys',
      ]);
    });
  trust
    .command('sign-root')
    .description("sign, with an offline key read here and never sent, what is pending under the root's keys: a new root (trust init, trust rotate) and/or the top-level targets (trust init, trust delegate). It prints what it signs first; only the signature is sent. With no network: --offline --in STATUS --out SIGNATURES on the key's machine, then --signature SIGNATURES from a connected one")
    .option('--key <pem>', 'an Ed25519 private key (PEM) of the root (or the targets role)')
    .option('--offline', 'sign with no network: read what is pending from --in, write the signatures to --out (nothing is sent; no --server needed)')
    .option('--in <file>', 'with --offline: the trust status a connected machine saved (`trust status --json > FILE`)')
    .option('--out <file>', 'with --offline: the signature file to write (a new file), to carry to a connected machine')
    .option('--signature <file>', 'send the signatures of a `sign-root --offline` (on a connected machine, through --server; no key needed)')
    .action(async (o: { key?: string; offline?: boolean; in?: string; out?: string; signature?: string }, cmd: Command) => {
      const L = await lib();
      if (o.signature !== undefined) {
        const extra = (['key', 'offline', 'in', 'out'] as const).filter((k) => o[k] !== undefined);
        if (extra.length) throw new StewardError('USAGE', `--signature sends signatures made already: it takes no ${extra.map((k) => `--${k}`).join(', ')}`);
        return submitSignatures(L, o.signature, cmd);
      }
      if (o.key === undefined) throw new StewardError('USAGE', 'sign-root needs --key PEM (the private key to sign with), or --signature FILE to send the signatures a `sign-root --offline` wrote');
      if (o.offline) {
        if (o.in === undefined || o.out === undefined) throw new StewardError('USAGE', '--offline needs --in STATUS (the output of `trust status --json`, saved on a connected machine) and --out FILE (the signatures it writes)');
        return signOffline(L, { key: o.key, in: o.in, out: o.out }, cmd);
      }
      if (o.in !== undefined || o.out !== undefined) throw new StewardError('USAGE', '--in and --out go with --offline (signing with no network)');
      const key = L.readPrivateKey(o.key);
      const id = L.tufKeyIdOf(key);
      const api = new L.TrustApi(L.trustTarget(cmd));
      const status = await api.status();
      L.needMetadata(status, 'sign what is pending');
      const { roles, signable } = signableRoles(L, status, id, o.key);
      const results: SignResult[] = [];
      const lines: string[] = [];
      for (let i = 0; i < signable.length; i++) {
        const role = signable[i] as 'root' | 'targets';
        const md = status.pending[role]!;
        // Shown before it is signed: a human checks the version, keys, thresholds and expiry.
        if (!jsonOf(cmd)) showSigning(L, status, role);
        L.signMetadata(md, key);
        const sig = md.signatures[id]!;
        const answer = (await api.postSignatures(role, [{ keyid: id, sig: sig.sig }])) as { published?: unknown; switched?: unknown } | null;
        const r = resultOf(L, status, role, id, answer?.published === true, switchedOf(answer));
        results.push(r);
        lines.push(`signed ${role} v${md.signed.version} with key ${id}`, ...resultLines(L, status, r, api.target.url));
        // Root v1 just published and no top-level targets yet (a server that takes them only under
        // a published root): the empty targets v1 goes pending now, and this key signs it if it may.
        if (await pendTargetsAfterRootV1(L, api, status, role, r.published)) {
          lines.push('put the top-level targets v1 pending (it delegates no app yet)');
          if (L.signerGroups(status, 'targets').some((g) => g.keys.some((k) => k.keyID === id))) signable.push('targets');
          else roles.push('targets');
        }
      }
      for (const role of roles.filter((r) => !signable.includes(r))) lines.push(`${role} v${status.pending[role]!.signed.version} is pending too, but key ${id} may not sign it (${L.signerGroups(status, role).map((g) => g.label).join('; ')})`);
      if (jsonOf(cmd)) return printJson({ signed: results });
      out(lines);
    });
  trust
    .command('rotate')
    .description("make root v+1 from the current root with the keys changed (root keys, thresholds, targets keys, new online keys), pending until a threshold of the current root's keys AND a threshold of the new root's keys sign it (trust sign-root): what a lost, stolen or retired key needs")
    .option('--keys <files>', 'the new root keys: comma-separated Ed25519 public key PEM files (default: the current ones)')
    .option('--threshold <n>', 'how many root keys must sign a root')
    .option('--targets-keys <files>', 'the new top-level targets keys')
    .option('--targets-threshold <n>', 'how many targets keys must sign the top-level targets')
    .option('--new-online <roles>', 'new online keys made by the server for these roles: any of snapshot,timestamp,director (what a compromised control plane needs)')
    .option('--expires-days <n>', 'how long the new root holds, in days', '365')
    .option('--replace', 'replace a root already pending (its signatures are lost)')
    .action(async (o: { keys?: string; threshold?: string; targetsKeys?: string; targetsThreshold?: string; newOnline?: string; expiresDays: string; replace?: boolean }, cmd: Command) => {
      const L = await lib();
      const rootKeys = o.keys ? L.readPublicKeys(o.keys, '--keys') : null;
      const targetsKeys = o.targetsKeys ? L.readPublicKeys(o.targetsKeys, '--targets-keys') : null;
      const roles = o.newOnline === undefined ? [] : newOnlineRoles(o.newOnline);
      const expires = L.daysFromNow(expiresDaysOf(o.expiresDays));
      const api = new L.TrustApi(L.trustTarget(cmd));
      const status = await api.status();
      L.needMetadata(status, 'make the next root');
      if (!status.root) throw new StewardError('USAGE', 'this fleet has no root yet: `steward-control trust init` makes the first one');
      if (status.pending.root && !o.replace) throw new StewardError('USAGE', `root v${status.pending.root.signed.version} is already pending: sign it with \`trust sign-root\`, or pass --replace to start over`);
      const was = status.root.signed;
      const nRoot = rootKeys ? rootKeys.length : was.roles['root']!.keyIDs.length;
      const threshold = o.threshold === undefined ? undefined : L.checkThreshold(parsePositiveInt(o.threshold, '--threshold', 1000), nRoot, '--threshold', rootKeys ? '--keys' : 'the current root keys');
      const nTargets = targetsKeys ? targetsKeys.length : was.roles['targets']!.keyIDs.length;
      const targetsThreshold = o.targetsThreshold === undefined ? undefined : L.checkThreshold(parsePositiveInt(o.targetsThreshold, '--targets-threshold', 1000), nTargets, '--targets-threshold', targetsKeys ? '--targets-keys' : 'the current targets keys');
      if (!rootKeys && !targetsKeys && roles.length === 0 && threshold === undefined && targetsThreshold === undefined) {
        process.stderr.write('note: no key or threshold changes: the new root only moves the expiry\n');
      }
      // The server makes the new keys (or answers the ones it made for the same request before)
      // and keeps them pending: they sign nothing until this root is published.
      const online = roles.length ? await api.onlineKeys(roles, null, o.replace === true) : null;
      let next;
      try {
        next = L.rotateRoot(status.root, {
          ...(rootKeys ? { rootKeys: rootKeys.map((k) => k.key) } : {}),
          ...(threshold !== undefined ? { threshold } : {}),
          ...(targetsKeys ? { targetsKeys: targetsKeys.map((k) => k.key) } : {}),
          ...(targetsThreshold !== undefined ? { targetsThreshold } : {}),
          ...(online && roles.includes('snapshot') ? { snapshotKey: online.snapshot } : {}),
          ...(online && roles.includes('timestamp') ? { timestampKey: online.timestamp } : {}),
          ...(online && roles.includes('director') ? { directorKey: online.director } : {}),
          expires,
        });
      } catch (err) {
        throw new StewardError('USAGE', `cannot make the next root: ${(err as Error).message}`, { cause: err });
      }
      await api.putPending('root', L.metadataBytes(next));
      const oldRole = was.roles['root']!;
      const newRole = next.signed.roles['root']!;
      const command = signCommand(api.target.url);
      const newOnline = Object.fromEntries(roles.map((r) => [r, online![r as (typeof ONLINE_ROLES)[number]].keyID]));
      if (jsonOf(cmd)) {
        return printJson({ pending: { root: { version: next.signed.version, threshold: newRole.threshold, keyids: newRole.keyIDs, expires: next.signed.expires } }, newOnline, mustSign: [{ of: `root v${was.version}`, threshold: oldRole.threshold, keyids: oldRole.keyIDs }, { of: `root v${next.signed.version}`, threshold: newRole.threshold, keyids: newRole.keyIDs }], next: command });
      }
      out([
        'pending:',
        ...L.describeRoot(next).map((l) => '  ' + l),
        `signing it needs both thresholds: ${oldRole.threshold} of root v${was.version}'s keys (${oldRole.keyIDs.join(', ')})`,
        `  and ${newRole.threshold} of root v${next.signed.version}'s keys (${newRole.keyIDs.join(', ')}); a key in both counts toward both`,
        `each key holder runs: ${command}`,
        ...(roles.length
          ? [
              `new online keys (made and held by the control plane, pending): ${roles.map((r) => `${r} ${newOnline[r]}`).join(', ')}`,
              `  the control plane goes on signing with the current ones until root v${next.signed.version} is published; then it signs with these only and deletes the old private keys`,
            ]
          : []),
      ]);
    });
  trust
    .command('delegate <app>')
    .description("make the top-level targets v+1 that delegates APP's releases to its own keys (replacing an earlier delegation of APP), pending until the root's targets key holders sign it with `trust sign-root` (which signs whatever is pending under the root's keys)")
    .requiredOption('--keys <files>', "the app's keys: comma-separated Ed25519 public key PEM files")
    .option('--threshold <n>', "how many of the app's keys must sign its releases (default: 2, or 1 with one key)")
    .option('--expires-days <n>', 'how long the top-level targets hold, in days', '365')
    .option('--replace', 'replace a top-level targets already pending (its signatures are lost)')
    .action(async (app: string, o: { keys: string; threshold?: string; expiresDays: string; replace?: boolean }, cmd: Command) => {
      const L = await lib();
      (await import('../../operations/check-names.js')).checkNames(app);
      const keys = L.readPublicKeys(o.keys, '--keys');
      const threshold = L.checkThreshold(o.threshold === undefined ? Math.min(2, keys.length) : parsePositiveInt(o.threshold, '--threshold', 1000), keys.length, '--threshold', '--keys');
      const expires = L.daysFromNow(expiresDaysOf(o.expiresDays));
      const api = new L.TrustApi(L.trustTarget(cmd));
      const status = await api.status();
      L.needMetadata(status, `delegate ${app}`);
      if (!status.targets) throw new StewardError('USAGE', status.pending.targets ? `the top-level targets v${status.pending.targets.signed.version} is pending, not published: finish signing it (\`trust sign-root\`) first` : 'this fleet has no TUF repository yet: `steward-control trust init` first');
      if (status.pending.targets && !o.replace) throw new StewardError('USAGE', `the top-level targets v${status.pending.targets.signed.version} is already pending: sign it with \`trust sign-root\` first, or pass --replace to drop it`);
      const before = L.delegationOf(status.targets, app);
      const next = L.delegateApp(status.targets, app, keys.map((k) => k.key), threshold, { expires });
      await api.putPending('targets', L.metadataBytes(next));
      const groups = L.signerGroups({ ...status, pending: { ...status.pending, targets: next } }, 'targets');
      const command = signCommand(api.target.url);
      if (jsonOf(cmd)) {
        return printJson({ app, role: `app.${app}`, replaced: before !== null, pending: { targets: { version: next.signed.version, expires: next.signed.expires } }, threshold, keyids: keys.map((k) => k.key.keyID), mustSign: groups.map((g) => ({ of: g.label, threshold: g.threshold, keyids: g.keys.map((k) => k.keyID) })), next: command });
      }
      out([
        `pending: ${before ? 're-delegating' : 'delegating'} ${app} to ${threshold} of ${keys.length} keys`,
        ...L.describeTargets(next).map((l) => '  ' + l),
        ...groups.map((g) => `${g.threshold} of ${g.label} sign it (${g.keys.map((k) => k.keyID).join(', ')}); each runs:`),
        `  ${command}`,
        `then \`steward-control release add ${app} VERSION ... --key K1.pem --key K2.pem\` signs ${app}'s releases with ${threshold} of its keys`,
      ]);
    });
  trust
    .command('export-root')
    .description("write the fleet's current root (checked here: signed by a threshold of its own keys) to a file, the one hosts are given to start trusting the repository (agentctl enroll --trust-root FILE, agentctl trust set-root FILE)")
    .requiredOption('--out <file>', 'the file to write (must not exist)')
    .action(async (o: { out: string }, cmd: Command) => {
      const L = await lib();
      const { existsSync, writeFileSync } = await import('node:fs');
      if (existsSync(o.out)) throw new StewardError('USAGE', `--out ${o.out} exists; pass a new file`);
      const status = await new L.TrustApi(L.trustTarget(cmd)).status();
      L.needMetadata(status, 'export the root');
      if (!status.root) throw new StewardError('NOT_FOUND', status.pending.root ? `root v${status.pending.root.signed.version} is pending, not published: finish signing it (trust sign-root) first` : 'this fleet has no TUF repository: `steward-control trust init` first');
      try {
        status.root.verifyDelegate('root', status.root);
      } catch (err) {
        throw new StewardError('SIGNATURE_INVALID', `the server's root v${status.root.signed.version} is not signed by a threshold of its own keys: ${(err as Error).message}`, { cause: err });
      }
      writeFileSync(o.out, L.metadataBytes(status.root), { flag: 'wx', mode: 0o644 });
      const r = status.root.signed;
      if (jsonOf(cmd)) return printJson({ file: o.out, version: r.version, expires: r.expires, keyids: r.roles['root']!.keyIDs, threshold: r.roles['root']!.threshold });
      out([`wrote root v${r.version} to ${o.out}`, ...L.describeRoot(status.root).map((l) => '  ' + l), `check its root key ids against your key holders, then on each host: agentctl trust set-root ${o.out} (or agentctl enroll ... --trust-root ${o.out})`]);
    });
  trust
    .command('status')
    .description("the fleet's TUF repository: root and targets versions, keys, thresholds and expiries, what is pending and who still must sign it, each app's delegation, the timestamp's age, the nodes by scheme")
    .action(async (_o: unknown, cmd: Command) => {
      const L = await lib();
      const api = new L.TrustApi(L.trustTarget(cmd));
      const { callAdminRoute } = await import('../remote-client.js');
      const raw = await callAdminRoute(api.target, 'GET', L.TRUST_ROUTE);
      if (jsonOf(cmd)) return printJson(raw);
      const { renderStatus } = await import('../trust/render-status.js');
      out(renderStatus(L.readStatus(raw), Date.now()));
    });
}

type Lib = Awaited<ReturnType<typeof lib>>;
type Status = Awaited<ReturnType<InstanceType<Lib['TrustApi']>['status']>>;
type SignResult = { role: string; version: number; keyid: string; published: boolean; thresholdsMet: boolean; switchedOnlineKeys: string[]; signatures: Array<{ of: string; signed: number; threshold: number; keyids: string[] }> };

// What is pending, and what of it key `id` may sign (FORBIDDEN, naming the keys that may, when nothing).
function signableRoles(L: Lib, status: Status, id: string, keyFile: string): { roles: Array<'root' | 'targets'>; signable: Array<'root' | 'targets'> } {
  const roles: Array<'root' | 'targets'> = (['root', 'targets'] as const).filter((r) => status.pending[r] !== null);
  if (roles.length === 0) throw new StewardError('NOT_FOUND', 'nothing is pending: `trust init`, `trust rotate` and `trust delegate` make what root key holders sign');
  const signable = roles.filter((r) => L.signerGroups(status, r).some((g) => g.keys.some((k) => k.keyID === id)));
  if (signable.length === 0) {
    const may = roles.flatMap((r) => L.signerGroups(status, r).map((g) => `${r}: ${g.label}: ${g.keys.map((k) => k.keyID).join(', ')}`));
    throw new StewardError('FORBIDDEN', `key ${id} (${keyFile}) may not sign what is pending (${roles.map((r) => `${r} v${status.pending[r]!.signed.version}`).join(', ')}); the keys that may: ${may.join('; ')}`);
  }
  return { roles, signable };
}

// What a key holder checks before signing: the pending item and what it changes from the published one.
function showSigning(L: Lib, status: Status, role: 'root' | 'targets'): void {
  const md = status.pending[role]!;
  const prev = role === 'root' ? status.root : status.targets;
  const changes = prev ? (role === 'root' ? L.rootChanges(prev as never, md as never) : L.targetsChanges(prev as never, md as never)) : [];
  process.stdout.write(
    ['signing:', ...(role === 'root' ? L.describeRoot(md as never) : L.describeTargets(md as never)).map((l) => '  ' + l), ...(prev ? [`  changes from ${role} v${prev.signed.version}:`, ...changes.map((c) => '    ' + c)] : [])].join('\n') + '\n',
  );
}

// Where the pending `role` stands once signed by `id` (its signatures as `status` holds them).
function resultOf(L: Lib, status: Status, role: 'root' | 'targets', id: string, published: boolean, switched: string[]): SignResult {
  const md = status.pending[role]!;
  const counts = L.countSignatures(md, L.signerGroups(status, role));
  return { role, version: md.signed.version, keyid: id, published, thresholdsMet: L.thresholdsMet(counts), switchedOnlineKeys: switched, signatures: counts.map((c) => ({ of: c.label, signed: c.signed.length, threshold: c.threshold, keyids: c.signed })) };
}

function resultLines(L: Lib, status: Status, r: SignResult, server: URL): string[] {
  const md = status.pending[r.role as 'root' | 'targets']!;
  const lines = L.countLines(L.countSignatures(md, L.signerGroups(status, r.role as 'root' | 'targets'))).map((l) => '  ' + l);
  if (r.published) lines.push(`  published ${r.role} v${r.version}`);
  else if (r.thresholdsMet) lines.push(`  the thresholds are met: the server publishes ${r.role} v${r.version} (\`steward-control trust status\`)`);
  else lines.push(`  another key holder runs: ${signCommand(server)}`);
  if (r.switchedOnlineKeys.length) lines.push(`  the control plane now signs with its new ${r.switchedOnlineKeys.join(', ')} keys only (the old private keys are deleted); hosts take root v${r.version} at their next refresh`);
  return lines;
}

// The online roles whose new keys the publication switched to (the server's `switched`).
function switchedOf(answer: { switched?: unknown } | null): string[] {
  return Array.isArray(answer?.switched) ? answer.switched.filter((r): r is string => typeof r === 'string') : [];
}

// Root v1 just published and no top-level targets: puts the empty targets v1 pending (the server
// takes targets only under a published root) and updates `status`. Whether it did.
async function pendTargetsAfterRootV1(L: Lib, api: InstanceType<Lib['TrustApi']>, status: Status, role: 'root' | 'targets', published: boolean): Promise<boolean> {
  const md = status.pending[role];
  if (role !== 'root' || !published || !md || md.signed.version !== 1 || status.targets || status.pending.targets) return false;
  const targets = L.newTopTargets({ expires: L.daysFromNow(365) });
  await api.putPending('targets', L.metadataBytes(targets));
  status.root = md as never;
  status.pending = { root: null, targets };
  return true;
}

// `trust sign-root --offline --key PEM --in STATUS --out FILE`: no network, nothing sent.
async function signOffline(L: Lib, o: { key: string; in: string; out: string }, cmd: Command): Promise<void> {
  const S = await import('../trust/offline-signatures.js');
  const { existsSync, writeFileSync } = await import('node:fs');
  const key = L.readPrivateKey(o.key);
  const id = L.tufKeyIdOf(key);
  if (existsSync(o.out)) throw new StewardError('USAGE', `--out ${o.out} exists; pass a new file`);
  const status = S.readStatusFile(o.in);
  L.needMetadata(status, 'sign what is pending');
  const { roles, signable } = signableRoles(L, status, id, o.key);
  const entries: Array<import('../trust/offline-signatures.js').SignatureEntry> = [];
  const results: SignResult[] = [];
  const lines: string[] = [];
  for (const role of signable) {
    const md = status.pending[role]!;
    if (!jsonOf(cmd)) showSigning(L, status, role);
    L.signMetadata(md, key);
    entries.push({ role, version: md.signed.version, keyid: id, sig: md.signatures[id]!.sig, signedSha256: S.signedDigest(md) });
    const r = resultOf(L, status, role, id, false, []);
    results.push(r);
    lines.push(`signed ${role} v${md.signed.version} with key ${id}, offline: nothing was sent`, ...r.signatures.map((c) => `  with it, ${Math.min(c.signed, c.threshold)} of ${c.threshold} signatures of ${c.of}`));
  }
  for (const role of roles.filter((r) => !signable.includes(r))) lines.push(`${role} v${status.pending[role]!.signed.version} is pending too, but key ${id} may not sign it (${L.signerGroups(status, role).map((g) => g.label).join('; ')})`);
  writeFileSync(o.out, JSON.stringify(S.signatureFileOf(entries, Date.now()), null, 2) + '\n', { flag: 'wx', mode: 0o644 });
  const next = `steward-control --server URL trust sign-root --signature ${o.out}`;
  if (jsonOf(cmd)) return printJson({ out: o.out, signed: results.map(({ published: _p, ...r }) => r), next });
  out([...lines, `wrote ${o.out} (the signatures only; the key stays here)`, `next: carry it to a connected machine and run: ${next}`]);
}

// `trust sign-root --signature FILE`: sends the signatures an offline sign-root wrote, each checked
// first against what is pending now.
async function submitSignatures(L: Lib, file: string, cmd: Command): Promise<void> {
  const S = await import('../trust/offline-signatures.js');
  const sigs = S.readSignatureFile(file);
  const api = new L.TrustApi(L.trustTarget(cmd));
  const results: SignResult[] = [];
  const lines: string[] = [];
  for (const e of sigs.signatures) {
    // Read again for each: the one before may have published a root.
    const status = await api.status();
    L.needMetadata(status, 'send the signatures');
    const md = S.checkStillPending(status, e, file);
    const answer = (await api.postSignatures(e.role, [{ keyid: e.keyid, sig: e.sig }])) as { published?: unknown; switched?: unknown } | null;
    S.addSignature(md, e);
    const r = resultOf(L, status, e.role, e.keyid, answer?.published === true, switchedOf(answer));
    results.push(r);
    lines.push(`sent the signature of key ${e.keyid} over ${e.role} v${e.version} (made ${sigs.signedAt})`, ...resultLines(L, status, r, api.target.url));
    if (await pendTargetsAfterRootV1(L, api, status, e.role, r.published)) {
      lines.push('put the top-level targets v1 pending (it delegates no app yet): the root\'s targets key holders sign it the same way (save `trust status --json` again, `sign-root --offline`, then `--signature`)');
    }
  }
  if (jsonOf(cmd)) return printJson({ signed: results });
  out(lines);
}
