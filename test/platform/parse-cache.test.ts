import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as z from '../../src/core/zod-mini.js';
import { StewardError } from '../../src/core/errors.js';
import { readVersionedJson } from '../../src/platform/versioned-file.js';

// readVersionedJson(..., keep = true) keeps the parse of a file's text (parse-cache.ts): the
// same text gives the same answer without a second parse, any other text is checked in
// full, and no caller can change what is kept.
// A schema that counts its parses: each input goes through the counting step first.
let parses = 0;
const checker = z.pipe(
  z.transform((v: unknown) => (parses++, v)),
  z.strictObject({ schemaVersion: z.literal(1), items: z.array(z.string()) }),
);

function scratch(t: { after(fn: () => void): void }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-parse-cache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'f.json');
}

// The parses of `checker` from now on.
function counted() {
  const from = parses;
  return () => parses - from;
}

test('the same text is checked once; each answer is a fresh copy a caller may change', async (t) => {
  const file = scratch(t);
  const checks = counted();
  writeFileSync(file, JSON.stringify({ schemaVersion: 1, items: ['a'] }));
  const first = await readVersionedJson(file, 1, checker, 4096, true);
  assert.deepEqual(first, { schemaVersion: 1, items: ['a'] });
  first!.items.push('changed by a caller');
  const second = await readVersionedJson(file, 1, checker, 4096, true);
  assert.deepEqual(second, { schemaVersion: 1, items: ['a'] }, 'what the first caller changed is not kept');
  assert.notEqual(second, first);
  second!.items.length = 0;
  assert.deepEqual(await readVersionedJson(file, 1, checker, 4096, true), { schemaVersion: 1, items: ['a'] });
  assert.equal(checks(), 1, 'one schema check for one text');
});

test('another text, even of the same length, is checked in full; a bad one is refused every time', async (t) => {
  const file = scratch(t);
  const checks = counted();
  writeFileSync(file, JSON.stringify({ schemaVersion: 1, items: ['a'] }));
  await readVersionedJson(file, 1, checker, 4096, true);
  writeFileSync(file, JSON.stringify({ schemaVersion: 1, items: ['b'] }));
  assert.deepEqual(await readVersionedJson(file, 1, checker, 4096, true), { schemaVersion: 1, items: ['b'] });
  writeFileSync(file, JSON.stringify({ schemaVersion: 1, items: [7] }));
  for (let i = 0; i < 2; i++) {
    await assert.rejects(readVersionedJson(file, 1, checker, 4096, true), (e: unknown) => e instanceof StewardError && e.code === 'STATE_INVALID');
  }
  writeFileSync(file, JSON.stringify({ schemaVersion: 2, items: ['b'] }));
  await assert.rejects(readVersionedJson(file, 1, checker, 4096, true), /newer/);
  // Back to the text checked before: known good again, without a new check.
  writeFileSync(file, JSON.stringify({ schemaVersion: 1, items: ['b'] }));
  const before = checks();
  assert.deepEqual(await readVersionedJson(file, 1, checker, 4096, true), { schemaVersion: 1, items: ['b'] });
  assert.equal(checks(), before);
  assert.equal(before, 4, 'a, b, and the bad text twice: each checked');
});

test('without keep, every read is checked', async (t) => {
  const file = scratch(t);
  const checks = counted();
  writeFileSync(file, JSON.stringify({ schemaVersion: 1, items: ['a'] }));
  await readVersionedJson(file, 1, checker, 4096);
  await readVersionedJson(file, 1, checker, 4096);
  assert.equal(checks(), 2);
});
