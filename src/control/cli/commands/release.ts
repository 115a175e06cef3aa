import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { refusedAsUnknown } from '../../../core/refused-as-unknown.js';
import { AGENT_APP } from '../../../core/name-checks.js';
import { printJson, table, when } from '../../../cli/output.js';
import { packageRoot } from '../../../platform/own-version.js';
import { DEFAULT_EXPIRES_DAYS } from '../../catalog/release-defaults.js';
import { DEFAULT_DOWNGRADE_DAYS, MAX_DOWNGRADE_DAYS } from '../../../core/downgrade-limits.js';
import { jsonOf } from '../context.js';
import { invoke } from '../invoke.js';
import { parsePositiveInt } from '../parse-options.js';

// What the subcommands run is imported when one runs (the operations' schemas, the signing, tar
// for the packs): --help and the parsing of the command line register the commands without it.
const ops = () => import('../../operations/release-ops.js');
const names = () => import('../../operations/check-names.js');

function checkUrl(url: string, flag: string): string {
  try {
    const u = new URL(url);
    if (u.protocol === 'http:' || u.protocol === 'https:') return url;
  } catch {
    // fall through
  }
  throw new StewardError('USAGE', `${flag} ${JSON.stringify(url)} is not an http(s) URL`);
}

// `steward-control release add|allow-downgrade|list|remove|pack-agent|pack-steward`
export function registerRelease(program: Command): void {
  const release = program.command('release').description('the signed release catalog');
  release
    .command('add <app> <version>')
    .description('sign a manifest for a tarball here, with a key that stays on this machine, and add both to the catalog (the tarball is served at /v1/artifacts/<app>/<version>.tgz unless --url)')
    .requiredOption('--file <tgz>', 'the release tarball')
    .option('--url <url>', 'where nodes fetch it (the tarball is then not kept)')
    .option('--base-url <url>', "the control plane's public URL, to serve the kept tarball from")
    .option('--key <pem>', "the Ed25519 release private key (PEM); it is read here and never sent. Under TUF (the server's repository delegates the app), repeat it with a threshold of the app's delegation keys: the first also signs the manifest", collect)
    .option('--expires-days <n>', 'manifest lifetime in days', String(DEFAULT_EXPIRES_DAYS))
    .option('--resign', 'replace the manifest of this version (same bytes) signed by another key')
    .option('--index', 'sign a second manifest with the file index and serve the index, so hosts that read indexes fetch only the files they lack, and make static zstd patches from the 2 newest indexed versions where this Node.js has zstd (the default with --base-url; others get the plain manifest)')
    .option('--no-index', 'sign only the plain manifest: every host fetches the whole tarball')
    .action(async (app: string, version: string, o: { file: string; url?: string; baseUrl?: string; key?: string[]; expiresDays: string; resign?: boolean; index?: boolean }, cmd: Command) => {
      (await names()).checkNames(app, version);
      const keyFiles = requiredKeys(o.key);
      if (!o.url === !o.baseUrl) throw new StewardError('USAGE', 'pass exactly one of --url (fetch elsewhere) and --base-url (serve the tarball from this control plane)');
      const expiresDays = parsePositiveInt(o.expiresDays, '--expires-days', 3650);
      const [{ releaseKeyOf, signRelease }, { hashLocalFile }, { releaseAdd }, { withTarballIndex }] = await Promise.all([import('../../catalog/add-release.js'), import('../../catalog/upload-file.js'), ops(), import('../../catalog/file-index-of.js')]);
      if (o.index === true && o.url) throw new StewardError('USAGE', '--index serves the file index beside the kept tarball: pass --base-url, not --url');
      // Under TUF, the delegation's keys are checked before anything is signed or uploaded.
      const tuf = await (await trustRelease()).prepareTufRelease(cmd, app, keyFiles);
      const key = releaseKeyOf(readReleaseKey(await envelopeKeyFile(cmd, app, keyFiles)));
      const bytes = await hashLocalFile(o.file);
      // docs/design.md §20.2: with --base-url both manifests unless --no-index; with --url (the
      // tarball is elsewhere) only the plain one. The index is made here from the same tarball,
      // and made again by the catalog, which checks they agree.
      // A tarball the extractor refuses (UNSAFE_ARCHIVE: not a gzip tar, an entry no host would
      // extract) gets the plain manifest alone when the index is only the default, as release add
      // did before indexes, and says so; with an explicit --index it is refused.
      let index: { integrity: string; size: number } | null = null;
      let indexBytes: Buffer | null = null;
      let indexSkipped: { code: string; message: string } | null = null;
      if (o.baseUrl && o.index !== false) {
        try {
          [index, indexBytes] = await withTarballIndex(o.file, async (i) => [{ integrity: i.integrity, size: i.size }, i.bytes] as const);
        } catch (err) {
          if (o.index === true || !(err instanceof StewardError) || err.code !== 'UNSAFE_ARCHIVE') throw err;
          indexSkipped = { code: err.code, message: err.message };
        }
      }
      // The manifest is signed here, on this machine's clock (the server host's, for --db).
      const signed = signRelease({ app, version, bytes, url: o.url ? checkUrl(o.url, '--url') : null, baseUrl: o.baseUrl ? checkUrl(o.baseUrl, '--base-url') : null, key, expiresDays, now: Date.now(), resign: o.resign === true, index });
      const fields = { app, version, manifest: signed.manifest, publicKey: signed.publicKey, keep: signed.keep, resign: signed.resign };
      let r: Awaited<ReturnType<typeof releaseAdd.run>>;
      try {
        r = await invoke(cmd, releaseAdd, { ...fields, ...(signed.indexedManifest ? { indexedManifest: signed.indexedManifest } : {}) }, bytes);
      } catch (err) {
        // A steward-control from before indexed manifests (--server, during a rolling upgrade)
        // refuses the key: the plain manifest alone, as it would have made, and said so.
        if (!signed.indexedManifest || !refusedAsUnknown(err, 'indexedManifest', 'USAGE')) throw err;
        indexSkipped = { code: 'USAGE', message: 'the steward-control at --server is from before indexed manifests and keeps only the plain one: hosts fetch the whole tarball' };
        r = await invoke(cmd, releaseAdd, fields, bytes);
      }
      // Under TUF: the app's targets name the plain manifest (the one every desired entry carries and
      // the helper checks as manifest.json, docs/design.md §21.1) and, when the catalog keeps the
      // index, the index, signed here by the delegation's keys.
      let trust: Awaited<ReturnType<Awaited<ReturnType<typeof trustRelease>>['signAndUploadTargets']>> | null = null;
      if (tuf) {
        const indexed = r.index && signed.indexedManifest && !indexSkipped ? signed.indexedManifest : null;
        const manifestBytes = Buffer.from(signed.manifest.payload, 'base64');
        try {
          trust = await (await trustRelease()).signAndUploadTargets(tuf, { app, version, manifestBytes, ...(indexed && indexBytes ? { indexBytes } : {}) });
        } catch (err) {
          const e = err instanceof StewardError ? err : new StewardError('INTERNAL', (err as Error).message);
          throw new StewardError(e.code, `${app} ${version} is in the catalog, but its TUF targets were not uploaded (${e.message}); hosts under the tuf scheme do not install it until the same \`release add\` is run again`, { cause: err });
        }
      }
      if (jsonOf(cmd)) return printJson({ ...r, ...(indexSkipped ? { indexSkipped } : {}), ...(trust ? { trust } : {}) });
      if (indexSkipped) process.stderr.write(`warning: no file index for ${app} ${version}: ${indexSkipped.message}; every host fetches the whole tarball\n`);
      const p = r.payload;
      const head = r.change === 'added' ? `added ${app} ${version}` : r.change === 'refreshed' ? `re-signed ${app} ${version} (same key, fresh expiry)` : `re-signed ${app} ${version}: the manifest signed by key ${r.replacedKeyId} was replaced`;
      process.stdout.write(`${head}: url=${p.url} size=${p.size} expires=${when(p.expires)} keyId=${r.keyId}\n  integrity=${p.integrity}\n${r.index ? `  index=${r.index.url} size=${r.index.size} (hosts that read indexes get the indexed manifest)\n` : '  no file index: every host fetches the whole tarball\n'}${patchLines(r.patches)}${trust ? trustLine(trust) : ''}`);
    });
  release
    .command('allow-downgrade <app> <version>')
    .description("sign, with a release key of the app that stays on this machine, the authorization hosts need to go back to this older version (below the highest they ran), and store it: the control plane sends it with the version's updates until it expires")
    .option('--key <pem>', "an Ed25519 private key (PEM) allowed to sign the app's releases; it is read here and never sent. Under TUF, repeat it with a threshold of the app's delegation keys: the app's targets then name downgrade.json too", collect)
    .option('--expires-days <n>', `how long hosts accept it, in days (1 to ${MAX_DOWNGRADE_DAYS})`, String(DEFAULT_DOWNGRADE_DAYS))
    .action(async (app: string, version: string, o: { key?: string[]; expiresDays: string }, cmd: Command) => {
      (await names()).checkNames(app, version);
      const keyFiles = requiredKeys(o.key);
      const expiresDays = parsePositiveInt(o.expiresDays, '--expires-days', MAX_DOWNGRADE_DAYS);
      const [{ releaseKeyOf }, { signDowngrade }, { releaseAllowDowngrade, releaseList }] = await Promise.all([import('../../catalog/add-release.js'), import('../../catalog/allow-downgrade.js'), ops()]);
      const T = await trustRelease();
      const tuf = await T.prepareTufRelease(cmd, app, keyFiles);
      const key = releaseKeyOf(readReleaseKey(await envelopeKeyFile(cmd, app, keyFiles)));
      // Under TUF, the release's manifest as the app's targets name it, found before anything is sent.
      let manifestBytes: Buffer | null = null;
      if (tuf) {
        const listed = (await invoke(cmd, releaseList, { app })).releases.find((x) => x.version === version);
        const candidates = listed ? [listed.manifest, ...(listed.indexedManifest ? [listed.indexedManifest] : [])].map((e) => Buffer.from(e.payload, 'base64')) : [];
        manifestBytes = T.manifestBytesInTargets(tuf, version, candidates);
      }
      // Signed here, on this machine's clock (the server host's, for --db).
      const signed = signDowngrade({ app, version, key, expiresDays, now: Date.now() });
      const r = await invoke(cmd, releaseAllowDowngrade, { ...signed });
      let trust: Awaited<ReturnType<typeof T.signAndUploadTargets>> | null = null;
      if (tuf && manifestBytes) {
        try {
          trust = await T.signAndUploadTargets(tuf, { app, version, manifestBytes, downgradeBytes: Buffer.from(signed.authorization.payload, 'base64') });
        } catch (err) {
          const e = err instanceof StewardError ? err : new StewardError('INTERNAL', (err as Error).message);
          throw new StewardError(e.code, `the downgrade authorization of ${app} ${version} is stored, but its TUF target was not uploaded (${e.message}); hosts under the tuf scheme do not go back until the same \`release allow-downgrade\` is run again`, { cause: err });
        }
      }
      if (jsonOf(cmd)) return printJson(trust ? { ...r, trust } : r);
      process.stdout.write(
        `${r.replaced ? 'replaced the downgrade authorization' : 'authorized going back'}: hosts may install ${r.app} ${r.version} below the highest version they ran, until ${when(r.notAfter)} (key ${r.keyId})\n` +
          (trust ? trustLine(trust) : '') +
          `next: steward-control rollout start ${r.app} ${r.version} ...\n`,
      );
    });
  release
    .command('pack-agent')
    .description('pack the agent of this steward package as a release tarball of the app steward-agent (sign it with release add); on this machine, whatever --server says')
    .requiredOption('--out <tgz>', 'the tarball to write (must not exist)')
    .option('--version <version>', "the release version (default: this package's version)")
    .action(async (o: { out: string; version?: string }, cmd: Command) => {
      const pkg = packageRoot();
      if (!pkg) throw new StewardError('INTERNAL', 'cannot find the steward package (package.json) to pack the agent from');
      const { layOutAgentTree, packageVersion, packTree } = await import('../../../install/agent-release-pack.js');
      const version = o.version ?? packageVersion(pkg);
      (await names()).checkNames(AGENT_APP, version);
      if (existsSync(o.out)) throw new StewardError('USAGE', `--out ${o.out} exists; a release tarball is never overwritten`);
      const work = mkdtempSync(path.join(os.tmpdir(), 'steward-pack-agent-'));
      try {
        await layOutAgentTree(pkg, path.join(work, 'tree'), version);
        await packTree(path.join(work, 'tree'), o.out);
      } finally {
        // Why: the laid-out tree is only the tarball's source.
        rmSync(work, { recursive: true, force: true });
      }
      const size = statSync(o.out).size;
      if (jsonOf(cmd)) return printJson({ app: AGENT_APP, version, file: path.resolve(o.out), size });
      process.stdout.write(`packed ${AGENT_APP} ${version}: ${path.resolve(o.out)} (${size} bytes)\nnext: steward-control release add ${AGENT_APP} ${version} --file ${o.out} --key <agent release key> --base-url <url>\n  (under TUF: a --key for each of a threshold of the keys its delegation names)\n`);
    });
  release
    .command('pack-steward')
    .description("pack steward's own code (this package's bundles, without its Node.js runtime) as a release tarball of the app steward (sign it with release add steward); on this machine, whatever --server says")
    .requiredOption('--out <tgz>', 'the tarball to write (must not exist)')
    .option('--version <version>', "the release version (default: this package's version)")
    .action(async (o: { out: string; version?: string }, cmd: Command) => {
      const pkg = packageRoot();
      if (!pkg) throw new StewardError('INTERNAL', 'cannot find the steward package (package.json) to pack steward from');
      const [{ packageVersion }, { layOutStewardTree, packTree }, { SELF_APP }] = await Promise.all([import('../../../install/agent-release-pack.js'), import('../../../platform/release-tree.js'), import('../../../core/self-schemas.js')]);
      const version = o.version ?? packageVersion(pkg);
      (await names()).checkNames(SELF_APP, version);
      if (existsSync(o.out)) throw new StewardError('USAGE', `--out ${o.out} exists; a release tarball is never overwritten`);
      const work = mkdtempSync(path.join(os.tmpdir(), 'steward-pack-steward-'));
      try {
        await layOutStewardTree(pkg, path.join(work, 'tree'), version);
        await packTree(path.join(work, 'tree'), o.out);
      } finally {
        // Why: the laid-out tree is only the tarball's source.
        rmSync(work, { recursive: true, force: true });
      }
      const size = statSync(o.out).size;
      if (jsonOf(cmd)) return printJson({ app: SELF_APP, version, file: path.resolve(o.out), size });
      process.stdout.write(`packed ${SELF_APP} ${version}: ${path.resolve(o.out)} (${size} bytes)\nnext: steward-control release add ${SELF_APP} ${version} --file ${o.out} --key <steward release key> --base-url <url>\n  (under TUF: a --key for each of a threshold of the keys its delegation names)\n`);
    });
  release
    .command('remove <app> <version>')
    .description('take a version out of the catalog, and its kept tarball (refused while a running rollout uses it)')
    .action(async (app: string, version: string, _o: unknown, cmd: Command) => {
      const r = await invoke(cmd, (await ops()).releaseRemove, { app, version });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`removed ${r.removed.app} ${r.removed.version}${r.tarballRemoved ? ' and its tarball' : ''}\n`);
    });
  release
    .command('list [app]')
    .description('the releases in the catalog')
    .action(async (app: string | undefined, _o: unknown, cmd: Command) => {
      const out = await invoke(cmd, (await ops()).releaseList, { app });
      if (jsonOf(cmd)) return printJson(out);
      const t = [['APP', 'VERSION', 'SIZE', 'EXPIRES', 'KEY', 'INDEX', 'URL']];
      for (const r of out.releases) t.push([r.app, r.version, String(r.size), r.expired ? `EXPIRED ${when(r.expires)}` : r.expiresSoon ? `${when(r.expires)} (within 7 days: re-run release add)` : when(r.expires), r.keyId, r.index ? 'yes' : 'no', r.url]);
      process.stdout.write(out.releases.length ? table(t) : 'no releases\n');
      // The versions hosts may go back to (release allow-downgrade), while that holds.
      for (const r of out.releases) if (r.downgrade && !r.downgrade.expired) process.stdout.write(`${r.app} ${r.version}: hosts may go back to it until ${when(r.downgrade.notAfter)} (downgrade authorized by key ${r.downgrade.keyId})\n`);
    });
}

// --key, repeatable (a TUF delegation's threshold of keys), and required.
function collect(value: string, prev: string[] | undefined): string[] {
  return [...(prev ?? []), value];
}

function requiredKeys(keys: string[] | undefined): string[] {
  if (!keys || keys.length === 0) throw new StewardError('USAGE', "required option '--key <pem>' not specified");
  return keys;
}

function readReleaseKey(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new StewardError('NOT_FOUND', `cannot read the release key ${file}: ${(err as Error).message}`, { cause: err });
  }
}

// The key that signs the §6 envelope (the manifest, the downgrade authorization), which the
// catalog checks against the keys it allows for the app: the only --key, or with several (a TUF
// delegation's), the first the catalog allows (the first --key for an app it has no key of yet).
async function envelopeKeyFile(cmd: Command, app: string, keyFiles: string[]): Promise<string> {
  if (keyFiles.length === 1) return keyFiles[0] as string;
  const [{ keysList }, { keyIdOf, parsePrivateKey }] = await Promise.all([ops(), import('../../../platform/keys.js')]);
  const allowed = new Set((await invoke(cmd, keysList, { app })).keys.map((k) => k.keyId));
  if (allowed.size === 0) return keyFiles[0] as string;
  const found = keyFiles.find((f) => allowed.has(keyIdOf(parsePrivateKey(readReleaseKey(f)))));
  if (!found) throw new StewardError('FORBIDDEN', `none of the --key files is a release key the catalog allows for ${app} (allowed: ${[...allowed].join(', ')}); \`steward-control keys allow ${app} --key <one of them>.pub\` allows one`);
  return found;
}

// The TUF side of release add and allow-downgrade (@tufjs/models, the builders), imported when one runs.
const trustRelease = () => import('../trust/release-targets.js');

function trustLine(t: { role: string; version: number; targets: string[]; keyids: string[] }): string {
  return `  TUF: ${t.role} targets v${t.version} signed here by ${t.keyids.length} key${t.keyids.length === 1 ? '' : 's'} (${t.keyids.map((k) => k.slice(0, 16)).join(', ')}) and uploaded: ${t.targets.join(', ')}\n`;
}

// What `release add` says of the static patches it made (docs/design.md §20.5).
function patchLines(p: { from: string[]; notes: string[] } | undefined): string {
  if (!p) return '';
  const made = p.from.length > 0 ? `  patches from ${p.from.join(', ')}\n` : '';
  return made + p.notes.map((n) => `  ${n}\n`).join('');
}
