import { createHash, randomBytes } from 'node:crypto';
import fs, { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { ExtractLimits } from '../../core/config-schema.js';
import { StewardError, toStewardError } from '../../core/errors.js';
import { parseFileIndex } from '../../core/file-index.js';
import { PackReader, packBytes, packRequestBody, packWireBound } from '../../core/object-pack.js';
import { IncomingObject } from './incoming-object.js';
import { StreamDecoder } from './stream-decoder.js';
import { hasZstd } from '../../core/compression.js';
import { receivePatch, type PatchSource } from './stage-from-patch.js';
import { sortByPathBytes, treeDigestOf, type TreeEntry } from '../../core/tree-listing.js';
import type { Faults } from '../../platform/faults.js';
import { CheckedObjects } from '../../platform/object-checks.js';
import { adoptVerifiedFileSync, linkObjectSync, objectName, objectNames, objectPath } from '../../platform/object-store.js';
import { findSymlinkEscape } from '../../platform/symlink-jail.js';
import { unsafeMessage } from '../../platform/tar-entry-rules.js';
import { logger } from '../../platform/log.js';
import { TimeSlicer } from '../../platform/time-slice.js';
import { prepareStatWorker, StatAhead, type ObjectStat } from '../../platform/stat-ahead.js';
import type { ExtractResultLike } from './stage-io.js';

const log = logger('helper:objects');

// What building a tree from objects needs from the stage (stage-release.ts): how to fetch one URL
// (the index, by GET) or a pack (by POST), each verified as it says, from the sources in turn.
export interface IndexStageDeps {
  objectsDir: string;
  // The 0700 staging folder of this attempt; the tree goes to `<work>/tree`.
  work: string;
  limits: ExtractLimits;
  faults: Faults;
  // The index's bytes, matched against the signed integrity and size (INTEGRITY_MISMATCH if not),
  // and the bytes that came over the wire for them.
  fetchIndex(): Promise<{ bytes: Buffer; wireBytes: number }>;
  // POSTs `body` to the pack URL, handing the answer's bytes (a compressed pack, at most
  // `maxWireBytes` of them) to `sink`; returns how many came over the wire.
  fetchPack(body: Buffer, maxWireBytes: number, sink: (chunk: Uint8Array) => Promise<void>): Promise<number>;
  // Makes every write on the file system of `dir` durable (syncfs).
  syncFileSystem(dir: string): Promise<void>;
  // The tarball's size: above half of it missing, the tarball is fetched instead.
  tarballBytes: number;
  // Where static patches from versions the host has come from, best first (stage-from-patch.ts):
  // the next is tried only when the one before is not offered (nothing came).
  patches?: readonly PatchSource[];
  // Whether to make the tree's folders 0555 at once rather than 0700 and chmod them at the end;
  // found by trying when unset (readOnlyFoldersTakeEntries). Tests set it to take either way.
  sealFoldersAtMkdir?: boolean;
}

// What became of the patch a stage tried (docs/design.md §20.5): used, or why not.
export type PatchTry = { from: string; used: true } | { from: string; used: false; code: string | null; message: string };

export type IndexStage =
  | { done: true; ex: ExtractResultLike; fetchedBytes: number; reusedBytes: number; patch?: PatchTry; indexBytes: Buffer }
  // `fetchedBytes`, `patch`: what a patch tried for a release mostly missing moved, and why it was not taken.
  | { done: false; why: string; fetchedBytes?: number; patch?: PatchTry };

// Builds the release tree at `<work>/tree` from its signed file index and the objects the host
// has, fetching the missing ones as one pack (docs/design.md §20). Returns `done: false` (and
// leaves nothing) when more than half of the tarball's bytes are missing. A signed index that
// breaks the extraction's rules is UNSAFE_ARCHIVE; an index, pack or object that does not match
// what was signed is INTEGRITY_MISMATCH; the caller falls back to the tarball for the latter.
// Objects are put in place only once verified and durable; the tree holds links to objects only.
export async function stageFromIndex(d: IndexStageDeps): Promise<IndexStage> {
  const phases = new Phases();
  // The lstat worker's start-up (TreeBuilder) runs while the index comes.
  prepareStatWorker();
  // While the index comes: which objects the host has (the names in objects/, a readdir per
  // shard rather than an lstat per file; each object is still checked by the lstat its link
  // takes), taking turns with the fetch, and the record of checked objects.
  const indexing = d.fetchIndex();
  let record: CheckedObjects;
  let have: Set<string>;
  try {
    have = await objectNames(d.objectsDir);
    record = CheckedObjects.load(d.objectsDir);
    phases.mark('names+record');
  } catch (err) {
    await indexing.catch(() => undefined);
    throw err;
  }
  const { bytes: indexBytes, wireBytes } = await indexing;
  phases.mark('index');
  const entries = parseFileIndex(indexBytes, { maxEntries: d.limits.maxEntries, maxPathBytes: d.limits.maxPathLength, maxDepth: d.limits.maxDepth, maxTotalBytes: d.limits.maxBytes });
  // The bytes each file needs, once per sha256, and which the host lacks in either mode.
  const sizes = new Map<string, number>();
  // The mode the first file of those bytes has: the object a pack brings is made in it.
  const modes = new Map<string, number>();
  phases.mark('parse');
  for (const e of entries) {
    if (e.type !== 'file') continue;
    sizes.set(e.sha256, e.size);
    if (!modes.has(e.sha256)) modes.set(e.sha256, e.mode);
  }
  const missing: Array<{ sha256: string; size: number; mode: number }> = [];
  let reusedBytes = 0;
  for (const [sha, size] of sizes) {
    const mode = modes.get(sha) as number;
    if (have.has(objectName(sha, mode)) || have.has(objectName(sha, mode === 0o555 ? 0o444 : 0o555))) reusedBytes += size;
    else missing.push({ sha256: sha, size, mode });
  }
  const missingBytes = missing.reduce((n, m) => n + m.size, 0);
  phases.mark('lookup');
  // More than half missing: the tarball, unless a static patch (whose bytes are not the files'
  // but their difference from a version the host has) comes in under half of it.
  const overHalf = missingBytes > d.tarballBytes / 2;
  const overHalfWhy = `${missingBytes} of the tree's bytes are missing, more than half the ${d.tarballBytes}-byte tarball`;
  const patches = hasZstd() ? (d.patches ?? []) : [];
  if (overHalf && patches.length === 0) return { done: false, why: overHalfWhy };

  const incoming = path.join(d.work, 'objects-in');
  await fsp.mkdir(incoming, { mode: 0o700 });
  let fetchedBytes = wireBytes;
  const fresh = new Set(missing.map((m) => m.sha256));
  const tree = new TreeBuilder(d, path.join(d.work, 'tree'), entries, have, record);
  let patch: PatchTry | undefined;
  let treeDigest = '';
  try {
    // The folders and the links to objects the host has are made while the patch or the pack
    // comes: on a real network the wait for it is the longer part, and this work fills it. Not
    // for a release mostly missing, whose tree is made only once its patch is taken.
    const laying = overHalf ? null : tree.layOut(fresh);
    // Why: a failure of the links while the pack comes is taken up after the pack, not unhandled.
    laying?.catch(() => undefined);
    try {
      if (missing.length > 0) {
        // A static patch from a version the host has first, where one is offered; the pack otherwise.
        let used = false;
        for (const src of patches) {
          const byPatch = await receivePatch({ objectsDir: d.objectsDir, work: d.work, limits: d.limits, faults: d.faults, maxBytes: overHalf ? Math.floor(d.tarballBytes / 2) : d.tarballBytes }, src, incoming, sizes, missing);
          fetchedBytes += byPatch.wire;
          patch = byPatch.ok ? { from: src.from, used: true } : { from: src.from, used: false, code: byPatch.code, message: byPatch.message };
          used = byPatch.ok;
          if (byPatch.ok || byPatch.wire > 0 || byPatch.code !== 'FETCH_FAILED') break;
        }
        if (!used && overHalf) throw new NoPatchOverHalf(`${overHalfWhy}, and no patch under half of it was taken${patch && !patch.used ? ` (${patch.message})` : ''}`, fetchedBytes);
        if (!used) fetchedBytes += await receivePack(d, incoming, missing);
      }
    } catch (err) {
      tree.stop();
      await laying?.catch(() => undefined);
      // The tarball, as for any release mostly missing (not a failure: no fallback code).
      if (err instanceof NoPatchOverHalf) return { done: false, why: err.message, fetchedBytes: err.fetchedBytes, ...(patch ? { patch } : {}) };
      throw err;
    }
    await (laying ?? tree.layOut(fresh));
    phases.mark('layout+fetch');
    // The pack's files are linked into the tree where they are (objects-in/), not yet as objects.
    const copies = await tree.finish(fresh, incoming, modes);
    // One syncfs makes the pack's bytes and the whole tree durable (the caller's commit needs no
    // other): the objects' names come only after it, as an object name only ever names durable
    // bytes. Their renames need not be durable before the tree's: a power cut that loses one
    // leaves a complete tree whose file is no object, fetched again by the next stage that lacks it.
    await fsp.chmod(tree.root, 0o755);
    phases.mark('finish');
    d.faults.io('objects', 'fsync');
    const made = [...missing.map((m) => ({ file: path.join(incoming, m.sha256), name: objectName(m.sha256, m.mode) })), ...copies];
    const syncing = d.syncFileSystem(d.work);
    // While the disk works (the syncfs runs in the thread pool): the listing's digest, and the
    // record of checked objects but for those made after it.
    treeDigest = treeDigestOf(entries);
    tree.prepareChecks(new Set(made.map((m) => m.name)));
    await syncing;
    phases.mark('syncfs');
    const slicer = new TimeSlicer();
    for (const m of made) {
      d.faults.io('objects', 'rename');
      adoptVerifiedFileSync(d.objectsDir, m.file, m.name);
      tree.noteMade(m.name);
      if (slicer.due()) await slicer.pass();
    }
  } finally {
    tree.saveChecks();
  }
  phases.mark('adopt');
  const bytes = entries.reduce((n, e) => n + (e.type === 'file' ? e.size : 0), 0);
  log('staged from objects entries=%d missing=%d phases(ms) %s', entries.length, missing.length, phases.text());
  return { done: true, ex: { entries: entries.length, bytes, treeDigest, listing: entries, integrity: null }, fetchedBytes, reusedBytes, ...(patch ? { patch } : {}), indexBytes };
}

// Where a stage from objects spends its time, for the debug log (`DEBUG=helper:objects`): the
// milliseconds between marks, named by the phase each mark ends.
class Phases {
  private last = performance.now();
  private readonly took: string[] = [];

  mark(name: string): void {
    const now = performance.now();
    this.took.push(`${name}=${(now - this.last).toFixed(1)}`);
    this.last = now;
  }

  text(): string {
    return this.took.join(' ');
  }
}

// A release mostly missing whose patches were not taken: the stage takes the tarball.
class NoPatchOverHalf extends Error {
  constructor(
    message: string,
    readonly fetchedBytes: number,
  ) {
    super(message);
  }
}

// How many POSTs one pack may take: the first, and asks for the rest after a cut (§20.5).
export const PACK_TRIES = 3;

// Receives the pack of `missing` into `<incoming>/<sha256>` files (in their objects' modes), each
// hashed as it is written and compared with its name before the next begins. An answer cut
// midway (the connection, or a compressed stream that ends early) keeps the objects that came
// whole and verified, and a new POST asks for the rest: a pack is made per request, so this is
// its form of `Range` (docs/design.md §20.5); at most PACK_TRIES requests in all.
async function receivePack(d: IndexStageDeps, incoming: string, missing: ReadonlyArray<{ sha256: string; size: number; mode: number }>): Promise<number> {
  let pending = missing;
  let wire = 0;
  for (let attempt = 1; ; attempt++) {
    const r = await receivePackOnce(d, incoming, pending);
    wire += r.wire;
    pending = pending.filter((m) => !r.got.has(m.sha256));
    if (!r.error || pending.length === 0) break;
    // Only a try that brought objects is worth another: a refusal or a cut before the first
    // whole object falls back to the tarball.
    if (!r.cut || r.got.size === 0 || attempt >= PACK_TRIES) throw r.error;
    log('pack cut after %d of %d objects (%s); asking for the %d left', r.got.size, r.got.size + pending.length, r.error.message, pending.length);
  }
  log('pack received objects=%d bytes=%d wire=%d', missing.length, packBytes(missing.map((m) => m.size)), wire);
  return wire;
}

// One POST for the pack of `want`: which objects came whole and verified, and the error that
// ended it, if any (`cut` when the answer only stopped short).
async function receivePackOnce(
  d: IndexStageDeps,
  incoming: string,
  want: ReadonlyArray<{ sha256: string; size: number; mode: number }>,
): Promise<{ wire: number; got: Set<string>; error: StewardError | null; cut: boolean }> {
  let out: IncomingObject | null = null;
  let current: string | null = null;
  let hash = createHash('sha256');
  let wire = 0;
  const got = new Set<string>();
  const reader = new PackReader(want, {
    start: async (i) => {
      d.faults.io('objects', 'write');
      const m = want[i] as { sha256: string; mode: number };
      current = path.join(incoming, m.sha256);
      out = new IncomingObject(current, m.mode);
      hash = createHash('sha256');
    },
    data: async (chunk) => {
      hash.update(chunk);
      (out as IncomingObject).write(chunk);
    },
    end: async (i) => {
      (out as IncomingObject).close();
      out = null;
      const wantSha = (want[i] as { sha256: string }).sha256;
      const sum = hash.digest('hex');
      if (sum !== wantSha) {
        throw new StewardError('INTEGRITY_MISMATCH', `the pack's object ${wantSha.slice(0, 16)}… holds other bytes (sha256 ${sum.slice(0, 16)}…)`);
      }
      current = null;
      got.add(wantSha);
    },
  });
  // The answer is gzip or zstd (docs/protocol.md), read from its first bytes; each chunk is
  // decompressed as it arrives and read by the pack reader, which refuses a byte past the objects
  // asked (so no bomb inflates further).
  const decoder = new StreamDecoder('the pack', (c) => reader.push(c));
  let error: StewardError | null = null;
  let cut = false;
  try {
    wire = await d.fetchPack(packRequestBody(want.map((m) => m.sha256)), packWireBound(want.map((m) => m.size)), (chunk) => decoder.write(chunk));
    await decoder.end();
    reader.finish();
  } catch (err) {
    // Why toStewardError here: the fetch takes any other error from its sink for a network one
    // (FETCH_FAILED), and a full disk must stay DISK_FULL, a bad pack INTEGRITY_MISMATCH.
    const failure = decoder.failure ?? err;
    error = failure instanceof StewardError ? failure : toStewardError(failure, 'IO_ERROR', "writing the pack's objects");
    cut = (error.code === 'FETCH_FAILED' && decoder.failure === null) || decoder.truncated || reader.endedShort;
  } finally {
    // The decompressor stopped first: a pack reader callback still running (one that opens the
    // next object's file, say) ends before the files are closed and unlinked below.
    await decoder.stop();
    (out as IncomingObject | null)?.abandon();
  }
  // Why unlink at once: bytes that are not (or not yet) what their name says never stay under it.
  if (current !== null) await fsp.unlink(current).catch(() => undefined);
  if (error && !cut) for (const sha of got) await fsp.unlink(path.join(incoming, sha)).catch(() => undefined);
  return { wire, got: error && !cut ? new Set() : got, error, cut };
}

// Makes the tree the index lists: folders 0700 while it is built and 0555 after, every file a
// link to the object the host has (checked again unless the record of checked objects says it is
// unchanged since the helper last checked it: docs/design.md §20.3) or to the verified file the
// pack or patch brought (made an object after the syncfs), symlinks last, each resolving inside
// the tree, as the extraction's tree walk requires (§3.4). In two parts: `layOut` (the folders,
// and the files whose objects the host has) while the pack comes, `finish` (the files of the
// pack, the symlinks, the folders sealed) after.
class TreeBuilder {
  private readonly sorted: TreeEntry[];
  // The objects this stage checked (or made), each linked once checked, with its inode.
  private readonly checked = new Map<string, number>();
  private first = true;
  private stopped = false;
  // Whether the folders were made 0555 (readOnlyFoldersTakeEntries), so need no chmod at the end.
  private sealedAtMkdir = false;
  private readonly slicer = new TimeSlicer();
  // The change time the stage's first link set, and the tree's name of the latest object it
  // linked (the window of its links' change times: `noteLinks`).
  private linksFrom: number | null = null;
  private lastLinked: string | null = null;

  constructor(
    private readonly d: IndexStageDeps,
    readonly root: string,
    entries: readonly TreeEntry[],
    // The object names the host has (not checked: each link checks its object).
    private readonly have: Set<string>,
    private readonly record: CheckedObjects,
  ) {
    this.sorted = sortByPathBytes(entries);
  }

  // Why synchronous calls, a slice at a time: thousands of small links and hashes cost more in
  // thread-pool round trips than in work (bench/objects.ts); the turn between slices lets the
  // pack come in and keeps the helper answering (status, other apps) while it stages. The loops
  // test `slicer.due()` themselves and await only this turn at a slice's end: an await per file,
  // even of nothing, cost more than a link's JavaScript.
  private async pass(): Promise<void> {
    await this.slicer.pass();
    if (this.stopped) throw new StewardError('IO_ERROR', 'the tree was left unfinished: the pack failed');
  }

  stop(): void {
    this.stopped = true;
  }

  async layOut(fresh: ReadonlySet<string>): Promise<void> {
    await fsp.mkdir(this.root, { mode: 0o700 });
    this.sealedAtMkdir = this.d.sealFoldersAtMkdir ?? readOnlyFoldersTakeEntries(this.root);
    const mode = this.sealedAtMkdir ? 0o555 : 0o700;
    // The objects to link, each once, in the order the links come, lstatted by a worker from now
    // on (stat-ahead.ts): its lstats run beside the folders' mkdirs and the links below.
    const toCheck = new Map<string, number>();
    for (const e of this.sorted) {
      if (e.type !== 'file' || fresh.has(e.sha256)) continue;
      const name = objectName(e.sha256, e.mode);
      if (!toCheck.has(name)) toCheck.set(name, toCheck.size);
    }
    const ahead = StatAhead.start([...toCheck.keys()].map((name) => objectPath(this.d.objectsDir, name)));
    try {
      // Parents sort before their children by path bytes ('a' < 'a/b'), so a folder exists before its entries.
      for (const e of this.sorted) {
        if (e.type !== 'dir') continue;
        fs.mkdirSync(`${this.root}/${e.path}`, { mode });
        if (this.slicer.due()) await this.pass();
      }
      try {
        for (const e of this.sorted) {
          if (e.type !== 'file' || fresh.has(e.sha256)) continue;
          const name = objectName(e.sha256, e.mode);
          if (!this.checked.has(name) && !this.have.has(name)) {
            await objectInOtherMode(this.d.objectsDir, e.sha256, e.mode, e.size);
            this.have.add(name);
          }
          this.link(e, name, this.checked.has(name) ? undefined : ahead.stat(toCheck.get(name) as number));
          if (this.slicer.due()) await this.pass();
        }
      } finally {
        this.noteLinks();
      }
    } finally {
      ahead.stop();
    }
  }

  // `incoming`: where the pack's verified files are (`<incoming>/<sha256>`, each in the mode
  // `modes` gives), linked from there. A file of the same bytes in the other mode gets its own
  // inode, a copy in that mode (an object's mode is part of its name). Returns the files to
  // make objects of once they are durable: the copies (the pack's own are the caller's).
  async finish(fresh: ReadonlySet<string>, incoming: string, modes: ReadonlyMap<string, number>): Promise<Array<{ file: string; name: string }>> {
    const copies = new Map<string, { file: string; name: string }>();
    for (const e of this.sorted) {
      if (e.type !== 'file' || !fresh.has(e.sha256)) continue;
      let from = `${incoming}/${e.sha256}`;
      if (((modes.get(e.sha256) as number) & 0o111) !== (e.mode & 0o111)) {
        const name = objectName(e.sha256, e.mode);
        const copy = copies.get(name) ?? { file: `${incoming}/${name}`, name };
        if (!copies.has(name)) {
          fs.copyFileSync(from, copy.file, fs.constants.COPYFILE_EXCL);
          fs.chmodSync(copy.file, e.mode);
          copies.set(name, copy);
        }
        from = copy.file;
      }
      this.firstLink();
      fs.linkSync(from, `${this.root}/${e.path}`);
      if (this.slicer.due()) await this.pass();
    }
    const { sorted, root: tree } = this;
    for (const e of sorted) if (e.type === 'symlink') fs.symlinkSync(e.target, path.join(tree, e.path));
    for (const e of sorted) {
      if (e.type !== 'symlink') continue;
      const escape = findSymlinkEscape(tree, e.path);
      if (escape) throw new StewardError('UNSAFE_ARCHIVE', unsafeMessage(e.path, escape));
    }
    // Children before parents: a folder is made read-only once nothing below it changes.
    if (!this.sealedAtMkdir) {
      for (let i = sorted.length - 1; i >= 0; i--) {
        const e = sorted[i] as TreeEntry;
        if (e.type === 'dir') fs.chmodSync(path.join(tree, e.path), 0o555);
      }
    }
    this.d.faults.hit('after-objects-before-rename');
    return [...copies.values()];
  }

  // The crash explorer's step at the first file linked into the tree.
  private firstLink(): void {
    if (this.first) this.d.faults.hit('during-objects');
    this.first = false;
  }

  saveChecks(): void {
    this.record.save();
  }

  // Makes the record's text ahead of saveChecks, but for the objects `later` (made after the syncfs).
  prepareChecks(later: ReadonlySet<string>): void {
    this.record.prepareSave(later);
  }

  // Notes the object `name`, made by this stage from bytes it hashed, as checked (after its rename
  // into objects/, which set its change time).
  noteMade(name: string): void {
    this.record.note(name);
  }

  // Links the file `e` to the object `name` the host has (its name for `e`'s bytes and mode),
  // checked by `taken`, its lstat made since the last change this stage made to it, when given.
  private link(e: TreeEntry & { type: 'file' }, name: string, taken: ObjectStat | undefined): void {
    const { d, record, checked } = this;
    this.firstLink();
    const dest = `${this.root}/${e.path}`;
    try {
      const ino = linkObjectSync(d.objectsDir, name, dest, e.size, checked.has(name), (st) => record.unchanged(name, st), taken);
      if (ino !== null) checked.set(name, ino);
    } catch (err) {
      record.forget(name);
      throw err;
    }
    // Read at once: a later link of the same object (a tree has many identical files) moves it.
    this.linksFrom ??= fs.lstatSync(dest).ctimeMs;
    this.lastLinked = dest;
  }

  // Notes every object this stage checked and linked by the window of its links' change times
  // (docs/design.md §20.3): the first link's (read right after it) and the last's (read after
  // it). Each link set its object's change time within them, so two lstats serve every object
  // rather than one after each link. What changes an object after its check and before the
  // window closes (a root process racing the stage) goes unseen, as a change right after the
  // lstat of a note would.
  private noteLinks(): void {
    if (this.linksFrom === null || this.lastLinked === null) return;
    let to: number;
    try {
      to = fs.lstatSync(this.lastLinked).ctimeMs;
    } catch {
      // The tree went: its objects are hashed at the next stage.
      for (const name of this.checked.keys()) this.record.forget(name);
      return;
    }
    for (const [name, ino] of this.checked) this.record.noteLinked(name, ino, this.linksFrom, to);
  }
}

// Whether this process may make entries in a folder it made 0555, so that a tree's folders are
// made in their final mode and spared a chmod each at the end (1,600 of them in node-red): root
// may (CAP_DAC_OVERRIDE), unless a unit took that capability away. Found once by trying, beside
// `root` (the staging folder's tree, 0700 and the helper's own), and also that the umask leaves
// 0555 whole.
let foldersTakeEntries: boolean | undefined;
function readOnlyFoldersTakeEntries(root: string): boolean {
  if (foldersTakeEntries !== undefined) return foldersTakeEntries;
  if (process.getuid?.() !== 0) return (foldersTakeEntries = false);
  const probe = `${root}.probe`;
  try {
    fs.mkdirSync(probe, { mode: 0o555 });
    fs.mkdirSync(`${probe}/entry`, { mode: 0o555 });
    foldersTakeEntries = (fs.lstatSync(probe).mode & 0o7777) === 0o555 && (fs.lstatSync(`${probe}/entry`).mode & 0o7777) === 0o555;
  } catch {
    foldersTakeEntries = false;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
  return foldersTakeEntries;
}

// Makes the object of `sha256` in `mode` from the one the host has in the other mode: its bytes
// copied (and hashed) into a new inode, as an object's mode is part of its name.
async function objectInOtherMode(objectsDir: string, sha256: string, mode: number, size: number): Promise<void> {
  const other = objectPath(objectsDir, objectName(sha256, mode === 0o555 ? 0o444 : 0o555));
  const tmp = path.join(path.dirname(other), `.tmp-${randomBytes(6).toString('hex')}`);
  const bytes = await fsp.readFile(other);
  if (bytes.length !== size || createHash('sha256').update(bytes).digest('hex') !== sha256) {
    await fsp.unlink(other).catch(() => undefined);
    throw new StewardError('INTEGRITY_MISMATCH', `object ${sha256.slice(0, 16)}… holds other bytes than its name; it was removed`);
  }
  await fsp.writeFile(tmp, bytes, { mode, flag: 'wx' });
  const fh = await fsp.open(tmp, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fsp.chmod(tmp, mode);
  await fsp.rename(tmp, objectPath(objectsDir, objectName(sha256, mode)));
}
