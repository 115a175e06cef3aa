#!/usr/bin/env node
// Runs every compiled test file (dist/test/**/*.test.js) with node:test. Node 20's --test
// takes no globs, so the files are listed here. Files whose name holds ".serial." (latency
// checks that a busy machine would disturb) run afterwards, alone. The last line sums both.
// The reporter is named: from Node 23 on, --test defaults to the spec reporter, whose summary
// lines are not TAP's `# pass N` that the counts below are read from.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const testDir = path.join(root, 'dist', 'test');
const only = process.argv.slice(2);

function walk(dir, out) {
  for (const name of readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

function run(files, concurrency) {
  return new Promise((resolve) => {
    const counts = { pass: 0, fail: 0, cancelled: 0, skipped: 0 };
    const child = spawn(process.execPath, ['--test', '--test-reporter=tap', '--test-reporter-destination=stdout', `--test-concurrency=${concurrency}`, ...files], { stdio: ['ignore', 'pipe', 'inherit'] });
    let tail = '';
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      const text = tail + chunk.toString('utf8');
      const lines = text.split('\n');
      tail = lines.pop() ?? '';
      for (const line of lines) {
        const m = /^# (pass|fail|cancelled|skipped) (\d+)$/.exec(line);
        if (m) counts[m[1]] = Number(m[2]);
      }
    });
    child.on('close', (code) => resolve({ code: code ?? 1, counts }));
  });
}

let files = walk(testDir, []);
if (only.length) files = files.filter((f) => only.some((o) => f.includes(o)));
if (files.length === 0) {
  console.error('no test files found under dist/test');
  process.exit(1);
}
const serial = files.filter((f) => path.basename(f).includes('.serial.'));
const parallel = files.filter((f) => !serial.includes(f));
const results = [];
if (parallel.length) results.push(await run(parallel, 2));
if (serial.length) results.push(await run(serial, 1));
const total = { pass: 0, fail: 0, skipped: 0 };
for (const r of results) {
  total.pass += r.counts.pass;
  total.fail += r.counts.fail + r.counts.cancelled; // a test its timeout cancelled failed too
  total.skipped += r.counts.skipped;
}
console.log(`${total.pass} passed, ${total.fail} failed, ${total.skipped} skipped`);
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
