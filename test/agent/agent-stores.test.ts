import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ActedStore } from '../../src/agent/acted-store.js';
import { SeqStore } from '../../src/agent/seq-store.js';
import { MAX_ADOPTED_SEQ } from '../../src/core/heartbeat-limits.js';
import { StewardError } from '../../src/core/errors.js';

function tmp(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'steward-agent-stores-'));
}

test('acted.json keeps only the newest attempts, and a reopened store still knows them', async () => {
  const dir = tmp();
  try {
    const file = path.join(dir, 'acted.json');
    const s = await ActedStore.open(file, 3);
    for (let i = 1; i <= 5; i++) await s.add({ attemptId: `a-${i}`, app: 'web', at: i, answer: 'accepted' });
    await s.add({ attemptId: 'a-5', app: 'web', at: 9, answer: 'accepted' });
    const again = await ActedStore.open(file, 3);
    assert.deepEqual(again.all.map((e) => e.attemptId), ['a-3', 'a-4', 'a-5']);
    assert.equal(again.has('a-1'), false);
    assert.equal(statSync(file).mode & 0o777, 0o600);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('seq.json only rises: raise never lowers it, and next continues from the file', async () => {
  const dir = tmp();
  try {
    const file = path.join(dir, 'seq.json');
    const s = await SeqStore.open(file);
    assert.equal(await s.next(), 1);
    await s.raise(10);
    await s.raise(4);
    assert.equal(await s.next(), 11);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { schemaVersion: 1, lastSeq: 11 });
    assert.equal(await (await SeqStore.open(file)).next(), 12);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('seq.json keeps no seq above MAX_ADOPTED_SEQ: raise refuses one, and a file holding one opens at 0 with a warning', async () => {
  const dir = tmp();
  try {
    const file = path.join(dir, 'seq.json');
    const s = await SeqStore.open(file);
    await s.raise(MAX_ADOPTED_SEQ);
    await assert.rejects(s.raise(MAX_ADOPTED_SEQ + 1), RangeError);
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).lastSeq, MAX_ADOPTED_SEQ, 'the refused raise wrote nothing');
    assert.equal(await s.next(), MAX_ADOPTED_SEQ + 1, 'the adopted seq still increments');
    const logs: string[] = [];
    const reopened = await SeqStore.open(file, (...a: unknown[]) => logs.push(a.map(String).join(' ')));
    assert.equal(reopened.lastSeq, 0);
    assert.match(logs.join('\n'), /WARNING: .*starting again from 0/);
    assert.equal(await reopened.next(), 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('agent state files from a newer steward or that do not parse are refused with STATE_INVALID', async () => {
  const dir = tmp();
  try {
    const cases: Array<[string, string, (f: string) => Promise<unknown>]> = [
      ['seq.json', JSON.stringify({ schemaVersion: 2, lastSeq: 1 }), (f) => SeqStore.open(f)],
      ['seq2.json', '{not json', (f) => SeqStore.open(f)],
      ['acted.json', JSON.stringify({ schemaVersion: 9, acted: [] }), (f) => ActedStore.open(f)],
      ['acted2.json', JSON.stringify({ schemaVersion: 1, acted: [{ attemptId: '../x' }] }), (f) => ActedStore.open(f)],
    ];
    for (const [name, body, open] of cases) {
      const f = path.join(dir, name);
      writeFileSync(f, body);
      await assert.rejects(open(f), (e: StewardError) => e.code === 'STATE_INVALID' && e.message.includes(name), name);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a refused agent file names the file, the field and the rule', async () => {
  const dir = tmp();
  try {
    const f = path.join(dir, 'acted.json');
    writeFileSync(f, JSON.stringify({ schemaVersion: 1, acted: [{ attemptId: 'a', app: 'w', at: -1, answer: 'x' }] }));
    await assert.rejects(ActedStore.open(f), (e: StewardError) => e.code === 'STATE_INVALID' && e.message === `${f}: acted.0.at: Too small: expected number to be >=0`);
    const s = path.join(dir, 'seq.json');
    writeFileSync(s, JSON.stringify({ schemaVersion: 1, lastSeq: 1.5, extra: true }));
    await assert.rejects(SeqStore.open(s), (e: StewardError) => e.code === 'STATE_INVALID' && e.message === `${s}: lastSeq: Invalid input: expected int, received number; (top level): Unrecognized key: "extra" (extra)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
