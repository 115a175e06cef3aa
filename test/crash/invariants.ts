// What must hold on a root once the helper's start has recovered it from a crash state
// (issue 7, item 2). Each check returns the sentences that are false; none means it holds.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { objectsDir, stagingDir, versionDir, versionsDir } from '../../src/core/paths.js';
import { treeDigestOf } from '../../src/core/tree-listing.js';
import { checkObject, listObjects } from '../../src/platform/object-store.js';
import { rereadTree } from '../../src/platform/tree-reread.js';
import { isTerminal } from '../../src/core/journal-schema.js';
import { compareVersions } from '../../src/core/version.js';
import { MARKER_FILE_NAME } from '../../src/core/release-schemas.js';
import { listVersionDirs, readCurrent, readMarker } from '../../src/helper/release-store.js';
import { readAppState } from '../../src/helper/state/app-state.js';
import { readJournal } from '../../src/helper/update/journal.js';
import { readRunRecord } from '../../src/helper/runners/run-record.js';
import { isSameProcessAlive } from '../../src/platform/proc-identity.js';
import type { StartedRoot } from './run-start.js';
import { loadTree } from './fs-model.js';
import { processesUnder } from '../helpers/app-processes.js';

// What the root held before the traced run, and the reference content of each release tree.
export interface Before {
  app: string;
  highestActive: string | null;
  receiptSeqs: number[];
  // versions/<v> content (marker left out) as the traced run left it or found it.
  trees: Map<string, string[]>;
}

// The listing of a release tree without its marker, comparable between two roots.
export async function treeListing(dir: string): Promise<string[]> {
  const m = await loadTree(dir, (rel) => rel === MARKER_FILE_NAME);
  // The top folder's own line carries its mode, which staging changes (0700 -> 0555): left out.
  return m.listing().slice(1);
}

// Every invariant of a recovered root; returns the violations.
export async function checkRecoveredRoot(started: StartedRoot, before: Before): Promise<string[]> {
  const { paths, core } = started;
  const { app } = before;
  const bad: string[] = [];

  // `current` resolves to a complete release with a valid marker.
  const cur = await readCurrent(paths, app).catch((err: Error) => ({ state: 'invalid' as const, target: null, why: err.message }));
  let currentVersion: string | null = null;
  if (cur.state === 'valid') {
    currentVersion = cur.version;
    const want = before.trees.get(cur.version);
    const got = await treeListing(versionDir(paths, app, cur.version));
    if (!want) bad.push(`current -> ${cur.version}, a version the run never had`);
    else if (want.join('\n') !== got.join('\n')) {
      const missing = want.filter((l) => !got.includes(l));
      bad.push(`current -> ${cur.version} is not the complete release: ${missing.length} entries differ, e.g. ${missing.slice(0, 2).join(' | ')}`);
    }
  } else if (cur.state === 'invalid') bad.push(`current is invalid: ${cur.why}`);
  else if (before.highestActive !== null) bad.push('current is absent, but a version was active before');

  // The journal parses and is terminal, and agrees with `current`.
  const read = await readJournal(paths, app);
  let attemptId: string | null = null;
  if (read.state === 'invalid') bad.push(`the journal is invalid: ${read.why}`);
  else if (read.state === 'ok') {
    const j = read.journal;
    attemptId = j.attemptId;
    if (!isTerminal(j.outcome)) bad.push(`the journal is not terminal: ${j.outcome}`);
    const says = j.outcome === 'active' ? j.targetVersion : j.fromVersion;
    if (isTerminal(j.outcome) && says !== currentVersion) {
      bad.push(`the journal says ${j.outcome} (${j.fromVersion} -> ${j.targetVersion}) but current -> ${currentVersion ?? 'nothing'}`);
    }
  }

  // Every terminal journal has its receipt; no receipt made durable before the run is gone.
  let seqs: number[] = [];
  try {
    const stored = await core.receiptStore.list(app);
    seqs = stored.map((r) => r.payload.seq);
    if (attemptId !== null && !stored.some((r) => r.payload.attemptId === attemptId)) bad.push(`no receipt for the journal's attempt ${attemptId}`);
    if (new Set(seqs).size !== seqs.length) bad.push(`receipt seqs repeat: ${seqs.join(',')}`);
  } catch (err) {
    bad.push(`the receipts cannot be read: ${(err as Error).message}`);
  }
  const lost = before.receiptSeqs.filter((s) => !seqs.includes(s));
  if (lost.length) bad.push(`receipts that were durable before the run are gone: seq ${lost.join(',')}`);

  // Nothing is left in .staging.
  const staged = await fsp.readdir(stagingDir(paths, app)).catch(() => [] as string[]);
  if (staged.length) bad.push(`.staging still holds ${staged.join(', ')}`);

  // The highest active version never went down; the app is not left blocked.
  try {
    const state = await readAppState(paths, app);
    const h = state.highestActive;
    if (before.highestActive !== null && (h === null || compareVersions(h, before.highestActive) < 0)) {
      bad.push(`the highest active version went down: ${before.highestActive} -> ${h}`);
    }
    if (state.blocked) bad.push(`the app is blocked: ${state.blocked.reason} ${state.blocked.message ?? ''}`);
  } catch (err) {
    bad.push(`state/${app}.json cannot be read: ${(err as Error).message}`);
  }
  // docs/design.md §5: a record that says `expected: running` names the app's one live process, of the
  // version `current` resolves to; no other process of the app runs, and none runs when the
  // record does not say running.
  try {
    const rec = await readRunRecord(paths, app);
    // Found the way the helper does not (by working folder): an oracle of its own. The apps here
    // (/bin/sleep) neither fork nor leave their release tree.
    const live = await processesUnder(versionsDir(paths, app));
    if (rec?.expected === 'running') {
      if (!rec.process || !(await isSameProcessAlive(rec.process))) bad.push(`the record says running, but its process ${rec.process?.pid ?? '(none)'} is not alive`);
      else if (rec.version !== currentVersion) bad.push(`the record says ${rec.version} runs, but current -> ${currentVersion ?? 'nothing'}`);
      const others = live.filter((pid) => pid !== rec.process?.pid);
      if (others.length) bad.push(`processes of the app that its record does not name: ${others.join(',')}`);
    } else if (live.length) bad.push(`the record says ${rec?.expected ?? 'nothing'}, but processes of the app run: ${live.join(',')}`);
  } catch (err) {
    bad.push(`supervisor/${app}.json cannot be read: ${(err as Error).message}`);
  }
  // docs/design.md §20: only complete objects (each holds the bytes its name says, no temporary
  // name is left) and only complete trees (each tree with a valid marker is what it digests).
  try {
    const { objects, strays } = await listObjects(objectsDir(paths, app));
    if (strays.length) bad.push(`objects/ still holds ${strays.map((p) => path.basename(p)).join(', ')}`);
    for (const o of objects) {
      const check = await checkObject(o.file, o.name);
      if (!check.ok) bad.push(`object ${o.name} ${check.why}`);
    }
    for (const v of await listVersionDirs(paths, app)) {
      const m = await readMarker(paths, app, v);
      if (m && treeDigestOf(await rereadTree(versionDir(paths, app, v))) !== m.treeDigest) bad.push(`versions/${v} has a valid marker but is not the tree it names`);
    }
  } catch (err) {
    bad.push(`objects/ or versions/ cannot be read: ${(err as Error).message}`);
  }
  if (core.blockedInMemory.has(app)) bad.push(`the app is blocked in memory: ${JSON.stringify(core.blockedInMemory.get(app))}`);
  return bad;
}
