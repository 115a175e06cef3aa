// A selector holding control characters (issue 31 item 16): a newline, U+2028, a vertical tab,
// a C1 control, an escape sequence or a bidi override in `--select` could forge or reorder lines
// wherever steward-control echoes it. The parser refuses them (whitespace between terms is the
// space), and every output that echoes a selector escapes them: the error, and what a run
// stored before this (rollout status, retry, the audit log), in human output and in --json,
// whose text then holds none either (the same document to a parser). Through the real CLI.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { controlCli, type ControlCliResult } from '../helpers/fleet.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-hostile-selector-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Every control character control-chars.ts names but the newline that ends a line of output.
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;
// A newline anywhere but at a line's end is checked by counting lines.
const HOSTILE: Array<[string, string, string]> = [
  ['a newline', 'env=prod\ncanary', '\\n'],
  ['a newline at the end (which trim() would drop)', 'env=prod\n', '\\n'],
  ['U+2028', 'env=prod,\u2028canary', '\\u2028'],
  ['U+2029', 'env=prod\u2029', '\\u2029'],
  ['a vertical tab', 'env=prod,\u000bcanary', '\\x0b'],
  ['a C1 control (NEL)', 'env=prod\u0085', '\\x85'],
  ['an escape sequence', 'env=\u001b[2Jprod', '\\x1b'],
  ['a right-to-left override', 'env=\u202eprod', '\\u202e'],
  ['a first-strong isolate', '\u2068env=prod', '\\u2068'],
];

function assertClean(r: ControlCliResult, what: string): void {
  for (const [name, text] of [['stdout', r.stdout], ['stderr', r.stderr]] as const) {
    assert.doesNotMatch(text, RAW, `${what}: ${name} holds a raw control character: ${JSON.stringify(text)}`);
  }
}

let db = '';
test('setup: a control plane with a node-less catalog release', async () => {
  db = path.join(dir, 'control.db');
  assert.equal((await controlCli(db, ['init'])).code, 0);
});

const COMMANDS = (sel: string) => [
  ['nodes', '--select', sel],
  ['nodes', 'label', '--select', sel, 'k=v'],
  ['receipts', '--select', sel],
  ['rollout', 'start', 'web', '1.0.0', '--select', sel, '--dry-run'],
  ['rollout', 'start', 'web', '1.0.0', '--select', sel],
];

async function refusedAndEscaped(args: string[], escaped: string, label: string, json: boolean): Promise<void> {
  const r = await controlCli(db, args);
  assert.equal(r.code, 2, `${label}: ${r.stderr}`);
  assertClean(r, label);
  assert.equal(r.stderr.split('\n').length, 2, `${label}: one line: ${JSON.stringify(r.stderr)}`);
  assert.match(r.stderr, /^steward-control: USAGE: selector "/, label);
  assert.ok(r.stderr.includes(escaped), `${label}: ${JSON.stringify(r.stderr)} shows ${escaped}`);
  assert.match(r.stderr, /control character/, label);
  if (!json) return;
  const j = await controlCli(db, [...args, '--json']);
  assert.equal(j.code, 2, label);
  assertClean(j, `${label} --json`);
  assert.equal(j.json.error.code, 'USAGE', label);
}

test('every command that takes --select refuses a hostile one, and its error shows it escaped, on one line', async () => {
  // Each command with U+2028 (the one JSON leaves as it is), each character with one command.
  for (const args of COMMANDS('env=prod,\u2028canary')) await refusedAndEscaped(args, '\\u2028', `U+2028: ${args.slice(0, 2).join(' ')}`, true);
  for (const [i, [what, sel, escaped]] of HOSTILE.entries()) {
    const args = COMMANDS(sel)[i % 5] as string[];
    await refusedAndEscaped(args, escaped, `${what}: ${args.slice(0, 2).join(' ')}`, i % 2 === 0);
  }
});

test('a selector stored before this is shown escaped by rollout status, in human output and --json', async () => {
  const keys = await controlCli(db, ['keys', 'create', '--out', path.join(dir, 'keys'), '--json']);
  assert.equal(keys.code, 0, keys.stderr);
  const tgz = path.join(dir, 'web.tgz');
  (await import('node:fs')).writeFileSync(tgz, 'tarball of web 1.0.0');
  assert.equal((await controlCli(db, ['release', 'add', 'web', '1.0.0', '--file', tgz, '--base-url', 'http://127.0.0.1:1', '--key', keys.json.privateKeyFile])).code, 0);
  // A run as an older steward-control stored it, its selector holding what the parser now refuses.
  const stored = 'env=prod,\u2028canary\n\u202eforged line\u001b[2J';
  const sql = new Database(db);
  sql.prepare(`INSERT INTO runs (app, version, startedAt, canary, batchSize, verdictTimeoutMs, allowRetryReverted, heartbeatIntervalMs, selector, canaries, namedCanaries, status)
    SELECT 'web', '1.0.0', 1, NULL, 0, 60000, 0, 30000, ?, 0, '[]', 'stopped'`).run(stored);
  sql.close();
  const human = await controlCli(db, ['rollout', 'status', 'web']);
  assert.equal(human.code, 0, human.stderr);
  assertClean(human, 'rollout status');
  assert.ok(human.stdout.includes('selector env=prod,\\u2028canary\\n\\u202eforged line\\x1b[2J'), human.stdout);
  assert.ok(!human.stdout.split('\n').some((l) => l.startsWith('forged line')), 'no line forged');
  const json = await controlCli(db, ['rollout', 'status', 'web', '--json']);
  assert.equal(json.code, 0, json.stderr);
  assertClean(json, 'rollout status --json');
  const runs = (json.json.runs ?? [json.json]) as Array<{ selector: string }>;
  assert.equal(runs[0]?.selector, stored, 'the same document to a parser');
});

test('an audit entry holding a hostile selector is shown escaped', async () => {
  const sql = new Database(db);
  sql.prepare(`INSERT INTO audit (at, operator, action, target, source, details) VALUES (?, 'local:root', 'rollout.start', 'web', NULL, ?)`).run(Date.now(), JSON.stringify({ select: 'env=prod\u2028forged\u202e' }));
  sql.close();
  const human = await controlCli(db, ['audit', '--since', '1d']);
  assert.equal(human.code, 0, human.stderr);
  assertClean(human, 'audit');
  assert.ok(human.stdout.includes('\\u2028forged\\u202e'), human.stdout);
  const json = await controlCli(db, ['audit', '--since', '1d', '--json']);
  assertClean(json, 'audit --json');
  assert.equal(json.json.entries.at(-1).details.select, 'env=prod\u2028forged\u202e');
});
