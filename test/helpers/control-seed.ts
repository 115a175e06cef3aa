// A control plane's data made for a test whose subject is something else (a backup of it, a
// restore): what `steward-control --db DB --artifacts DIR release add` and `token create` do,
// run in the test's own process by the same code (the signing of release.ts's `add`, then the
// operations through runOperation as invoke.ts runs them on the database, as `local:<user>`),
// without a CLI process each (~0.25 s of CPU). The tests of those commands run the CLI.
import { readFileSync } from 'node:fs';
import { localActor } from '../../src/control/audit/record-audit.js';
import { releaseKeyOf, signRelease } from '../../src/control/catalog/add-release.js';
import { DEFAULT_EXPIRES_DAYS } from '../../src/control/catalog/release-defaults.js';
import { copyIntoUploads, hashLocalFile } from '../../src/control/catalog/upload-file.js';
import { runOperation, type Operation } from '../../src/control/operations/operation.js';
import { releaseAdd } from '../../src/control/operations/release-ops.js';
import { tokenCreate } from '../../src/control/operations/token-ops.js';
import { openStore } from '../../src/control/store/open-store.js';

async function runLocal<I, O>(db: string, artifactsDir: string, op: Operation<I, O>, input: Record<string, unknown>, upload?: Awaited<ReturnType<typeof hashLocalFile>>): Promise<O> {
  const store = await openStore(db);
  try {
    const owned = upload ? await copyIntoUploads(artifactsDir, upload) : undefined;
    return await runOperation({ store, actor: localActor(), artifactsDir }, op, input, owned);
  } finally {
    await store.close();
  }
}

// `release add APP VERSION --file FILE --base-url BASE_URL --key KEY`: the tarball kept in `artifactsDir`.
export async function addRelease(db: string, artifactsDir: string, o: { app: string; version: string; file: string; baseUrl: string; key: string }): Promise<void> {
  const bytes = await hashLocalFile(o.file);
  const signed = signRelease({ app: o.app, version: o.version, bytes, url: null, baseUrl: o.baseUrl, key: releaseKeyOf(readFileSync(o.key, 'utf8')), expiresDays: DEFAULT_EXPIRES_DAYS, now: Date.now(), resign: false });
  await runLocal(db, artifactsDir, releaseAdd, { app: o.app, version: o.version, manifest: signed.manifest, publicKey: signed.publicKey, keep: signed.keep, resign: signed.resign }, bytes);
}

// `token create`: a token of the default lifetime (1 h), without labels.
export async function createToken(db: string, artifactsDir: string): Promise<{ token: string; id: string }> {
  return runLocal(db, artifactsDir, tokenCreate, { ttl: '1h', label: [] });
}
