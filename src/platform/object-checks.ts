import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { CHECKED_FILE, OBJECT_NAME_RE, objectPath } from './object-store.js';

// The helper's record of the objects it hashed and found to be their names (docs/design.md §20.3):
// `objects/checked`, a line `<object name> <inode> <ctime in ms>` per object, taken by lstat right
// after the helper last linked or made it. A write, a truncation, a chmod, a chown, a utimes, a link
// or an unlink of the inode all set its change time to the kernel's clock, which no system call
// sets back; so an object whose inode and change time are still the recorded ones has not been
// changed since it was checked, and a stage links it without reading its bytes again. Anything
// else (no record, another inode or change time, an unreadable record) is hashed as before.
// Losing the file costs time, never trust: it is written to a temporary name and renamed, never
// fsynced, and a record that does not read whole is ignored.
// A stage from an index notes the objects it links by a window instead, two lstats for all of them
// rather than one each (`noteLinked`): `<object name> <inode> <from> <to>`, the change times of
// its first and its last link, between which each of its links set the object's (§20.3).

// The change time in ms as lstat gives it, a double (the shortest text that reads back as it).
const TIME = '(\\d{1,16}(?:\\.\\d{1,20})?)';
const LINE_RE = new RegExp(`^([0-9a-f]{64}-[rx]) (\\d{1,16}) ${TIME}(?: ${TIME})?$`);
// A record over this is not read (an app has one line per object: 100,000 objects are ~10 MB).
const MAX_RECORD_BYTES = 64 * 1024 * 1024;

// The inode, and the change times it may have: one (`from` = `to`) when an lstat noted it, the
// window of a stage's links when the stage did.
interface Seen {
  readonly ino: number;
  readonly from: number;
  readonly to: number;
  // The line's text after the inode (" <from>" or " <from> <to>"): a stage notes thousands of
  // objects by one window, whose text is made once rather than twice per object at each save.
  readonly times: string;
}

function timesText(from: number, to: number): string {
  return to === from ? ` ${from}` : ` ${from} ${to}`;
}

// The record's line for the object `name`.
function lineOf(name: string, s: Seen): string {
  return `${name} ${s.ino}${s.times}\n`;
}

export class CheckedObjects {
  private readonly seen: Map<string, Seen>;
  // The last window noteLinked was given, with its text.
  private window: { from: number; to: number; times: string } | null = null;
  // The record's text but for the objects `later`, made by prepareSave; dropped by a change to
  // any other object.
  private prepared: { text: string; kept: Map<string, Seen>; later: ReadonlySet<string> } | null = null;
  private constructor(
    private readonly objectsDir: string,
    from?: ReadonlyMap<string, Seen>,
  ) {
    this.seen = new Map(from);
  }

  // The record of `objectsDir`, empty when there is none or it does not read whole. What this
  // process saved last is taken from memory while the file is still the one it wrote (the same
  // inode, size and change time: `remembered`); reading 8,000 lines again cost a stage 8-10 ms.
  static load(objectsDir: string): CheckedObjects {
    const r = new CheckedObjects(objectsDir);
    const file = path.join(objectsDir, CHECKED_FILE);
    let text: string;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(file);
      if (!st.isFile() || st.size > MAX_RECORD_BYTES) return r;
      const kept = remembered.get(objectsDir);
      if (kept && kept.identity === identityOf(st)) return new CheckedObjects(objectsDir, kept.seen);
      text = fs.readFileSync(file, 'latin1');
    } catch {
      return r;
    }
    if (text.length > 0 && !text.endsWith('\n')) return r;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const m = LINE_RE.exec(line);
      // A window that ends before it starts is no record the helper wrote.
      if (!m || (m[4] !== undefined && Number(m[4]) < Number(m[3]))) {
        // Why all or nothing: a torn or foreign file says nothing reliable about any object.
        r.seen.clear();
        return r;
      }
      const from = Number(m[3]);
      const to = m[4] === undefined ? from : Number(m[4]);
      r.seen.set(m[1] as string, { ino: Number(m[2]), from, to, times: timesText(from, to) });
    }
    // Read whole: kept only if the file did not change while it was read.
    try {
      const after = fs.lstatSync(file);
      if (identityOf(after) === identityOf(st) && after.size === text.length) remember(objectsDir, after, r.seen);
    } catch {
      // gone meanwhile: not remembered
    }
    return r;
  }

  get size(): number {
    return this.seen.size;
  }

  // Whether the object `name`, whose lstat is `st`, is unchanged since the helper checked it.
  unchanged(name: string, st: Pick<fs.Stats, 'ino' | 'ctimeMs'>): boolean {
    const s = this.seen.get(name);
    return !!s && s.ino === st.ino && st.ctimeMs >= s.from && st.ctimeMs <= s.to;
  }

  // Records `name` as checked now, by its lstat taken after the helper's last link of it; an
  // object gone or no longer a file is forgotten.
  note(name: string): void {
    try {
      const st = fs.lstatSync(objectPath(this.objectsDir, name));
      this.changed(name);
      if (st.isFile()) {
        this.seen.set(name, { ino: st.ino, from: st.ctimeMs, to: st.ctimeMs, times: timesText(st.ctimeMs, st.ctimeMs) });
        return;
      }
    } catch {
      // gone: forgotten below
    }
    this.forget(name);
  }

  names(): string[] {
    return [...this.seen.keys()];
  }

  // Records `name`, inode `ino`, as checked and then linked by a stage whose first link set its
  // object's change time to `from` and whose last link set its object's to `to`: each link in
  // between set this one's within them (the kernel's clock does not run back), and the lstat a
  // link of each would take is saved. A window that is no window (the clock set back meanwhile)
  // notes nothing.
  noteLinked(name: string, ino: number, from: number, to: number): void {
    this.changed(name);
    if (to < from) {
      this.seen.delete(name);
      return;
    }
    const w = this.window?.from === from && this.window.to === to ? this.window : (this.window = { from, to, times: timesText(from, to) });
    this.seen.set(name, { ino, from, to, times: w.times });
  }

  forget(name: string): void {
    this.changed(name);
    this.seen.delete(name);
  }

  private changed(name: string): void {
    if (this.prepared && !this.prepared.later.has(name)) this.prepared = null;
  }

  // The objects recorded whose lstat still matches: those a change to other links (a prune) may
  // note again afterwards without trusting anything that changed before it.
  stillUnchanged(): string[] {
    const out: string[] = [];
    for (const name of this.seen.keys()) {
      try {
        if (this.unchanged(name, fs.lstatSync(objectPath(this.objectsDir, name)))) out.push(name);
      } catch {
        // gone
      }
    }
    return out;
  }

  // Makes the text save() will write, but for the objects `later` (those a stage makes after its
  // syncfs): 8,000 lines took 5-10 ms, which the stage spends here while the disk works instead.
  prepareSave(later: ReadonlySet<string>): void {
    this.prepared = { ...this.textOf(later), later };
  }

  // The lines of the objects recorded, but for those in `skip`, and the entries they hold.
  private textOf(skip: ReadonlySet<string>): { text: string; kept: Map<string, Seen> } {
    const kept = new Map<string, Seen>();
    let text = '';
    for (const [name, s] of this.seen) {
      if (skip.has(name) || !OBJECT_NAME_RE.test(name)) continue;
      kept.set(name, s);
      text += lineOf(name, s);
    }
    return { text, kept };
  }

  // Replaces the record with what this holds (a temporary name, then a rename: a reader sees the
  // old record or the new one).
  save(): void {
    const p = this.prepared;
    this.prepared = null;
    const made = p ?? this.textOf(new Set());
    const kept = made.kept;
    let text = made.text;
    if (p) {
      for (const name of p.later) {
        const s = this.seen.get(name);
        if (!s || !OBJECT_NAME_RE.test(name)) continue;
        kept.set(name, s);
        text += lineOf(name, s);
      }
    }
    const file = path.join(this.objectsDir, CHECKED_FILE);
    const tmp = path.join(this.objectsDir, `.tmp-checked-${randomBytes(6).toString('hex')}`);
    remembered.delete(this.objectsDir);
    try {
      fs.writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
      // The temporary file's identity is the record's once renamed (a rename keeps the inode
      // and sets its change time, so the lstat comes after).
      fs.renameSync(tmp, file);
      remember(this.objectsDir, fs.lstatSync(file), kept);
    } catch {
      // Why not thrown: the record only saves time; without it the next stage hashes again.
      fs.rmSync(tmp, { force: true });
    }
  }
}

// What the record file of an objects folder said when this process last wrote or read it whole,
// by the file's identity then: a stage's record is taken from here while that is still the file's
// (a write by anyone else changes its change time, a replacement its inode). Entries are never
// changed in place (a note sets a new one), so a load shares them. The last few folders only.
const REMEMBERED_MAX = 4;
const remembered = new Map<string, { identity: string; seen: ReadonlyMap<string, Seen> }>();

function identityOf(st: fs.Stats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

function remember(objectsDir: string, st: fs.Stats, seen: ReadonlyMap<string, Seen>): void {
  remembered.delete(objectsDir);
  remembered.set(objectsDir, { identity: identityOf(st), seen });
  for (const oldest of remembered.keys()) {
    if (remembered.size <= REMEMBERED_MAX) break;
    remembered.delete(oldest);
  }
}

// Runs `change` (which unlinks trees' names of objects, so changes the objects' change times)
// and notes again the objects that were unchanged before it, so that a prune does not make the
// next stage hash every object the pruned tree shared with the kept ones.
export async function keepingChecks<T>(objectsDir: string, change: () => Promise<T>): Promise<T> {
  const record = CheckedObjects.load(objectsDir);
  const before = record.size > 0 ? record.stillUnchanged() : [];
  const out = await change();
  if (record.size === 0) return out;
  // Objects recorded but changed before the prune (or gone) are forgotten, never noted afresh;
  // the prune runs under the app's lock, so nothing else wrote the record meanwhile.
  const keep = new Set(before);
  for (const name of record.names()) if (!keep.has(name)) record.forget(name);
  for (const name of before) record.note(name);
  record.save();
  return out;
}
