import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { AGENT_APP, appNameSchema, versionSchema } from '../../../core/names.js';
import type { ManifestPayload } from '../../../core/release-schemas.js';
import { printJson, table, when } from '../../../cli/output.js';
import { packageRoot } from '../../../platform/own-version.js';
import { layOutAgentTree, packageVersion, packTree } from '../../../install/agent-release-pack.js';
import { addRelease, DEFAULT_EXPIRES_DAYS } from '../../catalog/add-release.js';
import { removeRelease } from '../../catalog/remove-release.js';
import { artifactsDirOfStore, jsonOf, withStore } from '../context.js';
import { parsePositiveInt } from '../parse-options.js';

// `release list` flags a manifest that expires within this: re-sign it before a rollout needs it.
const EXPIRES_SOON_MS = 7 * 86_400_000;

// Checks an app name and version given on the command line.
export function checkNames(app: string, version?: string): void {
  if (!appNameSchema.safeParse(app).success) throw new StewardError('USAGE', `${JSON.stringify(app)} is not an app name ([a-z0-9][a-z0-9_-]{0,62})`);
  if (version !== undefined && !versionSchema.safeParse(version).success) throw new StewardError('USAGE', `${JSON.stringify(version)} is not a version (semver without build metadata)`);
}

function checkUrl(url: string, flag: string): string {
  try {
    const u = new URL(url);
    if (u.protocol === 'http:' || u.protocol === 'https:') return url;
  } catch {
    // fall through
  }
  throw new StewardError('USAGE', `${flag} ${JSON.stringify(url)} is not an http(s) URL`);
}

// `steward-control release add|list`
export function registerRelease(program: Command): void {
  const release = program.command('release').description('the signed release catalog');
  release
    .command('add <app> <version>')
    .description('sign a manifest for a tarball and keep it (served at /v1/artifacts/<app>/<version>.tgz unless --url)')
    .requiredOption('--file <tgz>', 'the release tarball')
    .option('--url <url>', 'where nodes fetch it (the tarball is then not kept)')
    .option('--base-url <url>', "this control plane's public URL, to serve the kept tarball from")
    .requiredOption('--key <pem>', 'the Ed25519 release private key (PEM)')
    .option('--expires-days <n>', 'manifest lifetime in days', String(DEFAULT_EXPIRES_DAYS))
    .option('--resign', 'replace the manifest of this version (same bytes) signed by another key')
    .action(async (app: string, version: string, o: { file: string; url?: string; baseUrl?: string; key: string; expiresDays: string; resign?: boolean }, cmd: Command) => {
      checkNames(app, version);
      if (!o.url === !o.baseUrl) throw new StewardError('USAGE', 'pass exactly one of --url (fetch elsewhere) and --base-url (serve the tarball from this control plane)');
      const expiresDays = parsePositiveInt(o.expiresDays, '--expires-days', 3650);
      let privateKeyPem: string;
      try {
        privateKeyPem = readFileSync(o.key, 'utf8');
      } catch (err) {
        throw new StewardError('NOT_FOUND', `cannot read the release key ${o.key}: ${(err as Error).message}`, { cause: err });
      }
      const r = await withStore(cmd, (store) =>
        addRelease(store, {
          app,
          version,
          file: o.file,
          url: o.url ? checkUrl(o.url, '--url') : null,
          baseUrl: o.baseUrl ? checkUrl(o.baseUrl, '--base-url') : null,
          privateKeyPem,
          expiresDays,
          artifactsDir: artifactsDirOfStore(store),
          resign: o.resign === true,
        }),
      );
      if (jsonOf(cmd)) return printJson({ app: r.app, version: r.version, keyId: r.keyId, change: r.change, replacedKeyId: r.replacedKeyId, payload: r.payload, manifest: r.manifest, artifactPath: r.artifactPath });
      const p = r.payload;
      const head = r.change === 'added' ? `added ${app} ${version}` : r.change === 'refreshed' ? `re-signed ${app} ${version} (same key, fresh expiry)` : `re-signed ${app} ${version}: the manifest signed by key ${r.replacedKeyId} was replaced`;
      process.stdout.write(`${head}: url=${p.url} size=${p.size} expires=${when(p.expires)} keyId=${r.keyId}\n  integrity=${p.integrity}\n`);
    });
  release
    .command('pack-agent')
    .description('pack the agent of this steward package as a release tarball of the app steward-agent (sign it with release add)')
    .requiredOption('--out <tgz>', 'the tarball to write (must not exist)')
    .option('--version <version>', "the release version (default: this package's version)")
    .action(async (o: { out: string; version?: string }, cmd: Command) => {
      const pkg = packageRoot();
      if (!pkg) throw new StewardError('INTERNAL', 'cannot find the steward package (package.json) to pack the agent from');
      const version = o.version ?? packageVersion(pkg);
      checkNames(AGENT_APP, version);
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
      process.stdout.write(`packed ${AGENT_APP} ${version}: ${path.resolve(o.out)} (${size} bytes)\nnext: steward-control release add ${AGENT_APP} ${version} --file ${o.out} --key <agent release key> --base-url <url>\n`);
    });
  release
    .command('remove <app> <version>')
    .description('take a version out of the catalog, and its kept tarball (refused while a running rollout uses it)')
    .action(async (app: string, version: string, _o: unknown, cmd: Command) => {
      checkNames(app, version);
      const r = await withStore(cmd, (store) => removeRelease(store, artifactsDirOfStore(store), app, version));
      if (jsonOf(cmd)) return printJson({ removed: { app: r.app, version: r.version } });
      process.stdout.write(`removed ${app} ${version}${r.artifactPath ? ' and its tarball' : ''}\n`);
    });
  release
    .command('list [app]')
    .description('the releases in the catalog')
    .action(async (app: string | undefined, _o: unknown, cmd: Command) => {
      if (app) checkNames(app);
      const { rows, now } = await withStore(cmd, (store) => store.read(async (tx) => ({ rows: await tx.releases.list(app), now: await tx.now() })));
      const out = rows.map((r) => {
        const manifest = r.manifest;
        const payload = JSON.parse(Buffer.from(manifest.payload, 'base64').toString('utf8')) as ManifestPayload;
        const expired = r.expires <= now;
        return { app: r.app, version: r.version, url: payload.url, size: r.size, integrity: r.integrity, expires: r.expires, expired, expiresSoon: !expired && r.expires <= now + EXPIRES_SOON_MS, keyId: manifest.keyId, kept: r.artifactPath !== null, addedAt: r.addedAt, manifest };
      });
      if (jsonOf(cmd)) return printJson({ releases: out });
      const t = [['APP', 'VERSION', 'SIZE', 'EXPIRES', 'KEY', 'URL']];
      for (const r of out) t.push([r.app, r.version, String(r.size), r.expired ? `EXPIRED ${when(r.expires)}` : r.expiresSoon ? `${when(r.expires)} (within 7 days: re-run release add)` : when(r.expires), r.keyId, r.url]);
      process.stdout.write(out.length ? table(t) : 'no releases\n');
    });
}
