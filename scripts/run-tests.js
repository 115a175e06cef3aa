#!/usr/bin/env node
// Runs every compiled test file (dist/test/**/*.test.js) with node:test, each file in its own
// node process, four at a time, the known slowest first; files whose name holds
// ".serial." (latency checks that a busy machine would disturb) run afterwards, alone.
//
//   node scripts/run-tests.js [SUBSTRING ...]     only the files whose path holds one of these
//
// Each file's TAP output is printed whole when the file ends, headed by its name and time, so two
// files never interleave. A file still running after FILE_TIMEOUT_S (STEWARD_TEST_FILE_TIMEOUT_S)
// is killed with its process group and counted as failed, with what it printed so far: a hang
// names its file instead of using up CI's time. Every PROGRESS_S a line on stderr names the files
// still running. The end is the slowest files, the failed ones, and one line summing every file.
//
// The reporter is named: from Node 23 on, --test defaults to the spec reporter, whose summary
// lines are not TAP's `# pass N` that the counts below are read from. (Node 20's --test-timeout
// is not used: there it also bounds a whole file, not one test.)
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const testDir = path.join(root, 'dist', 'test');
const only = process.argv.slice(2);
// The longest file takes about 2 minutes on a quiet 2-core machine (the quick bench bounds its
// own scripts so that it stays under this too).
const FILE_TIMEOUT_S = Number(process.env.STEWARD_TEST_FILE_TIMEOUT_S ?? 900);
const PROGRESS_S = 120;
// Four, on a 2-core machine: most files spend much of their time waiting on the processes they
// start (probes, backoffs, containers booting), and at two at a time the suite used 65 % of the
// two cores (22m57s user, 5m04s sys in 21m42s of .ci/run, at 5db3e5e), at three 88 % (1,929 s of
// CPU in 1,100 s, at 19f8cdd). STEWARD_TEST_CONCURRENCY sets another number.
const CONCURRENCY = Number(process.env.STEWARD_TEST_CONCURRENCY || 4);
if (!Number.isInteger(CONCURRENCY) || CONCURRENCY < 1) {
  console.error(`STEWARD_TEST_CONCURRENCY must be a whole number of files at a time, 1 or more, not ${JSON.stringify(process.env.STEWARD_TEST_CONCURRENCY)}`);
  process.exit(2);
}

function walk(dir, out) {
  for (const name of readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

// One folder for the whole run, which every file may keep what it built in for the files after
// it (test/helpers/deb-cache.ts: each .deb is built once); removed when the run ends.
const cache = mkdtempSync(path.join(os.tmpdir(), 'steward-test-cache-'));
process.on('exit', () => rmSync(cache, { recursive: true, force: true }));
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]]) process.once(signal, () => process.exit(code));

// The environment of every test file. Node 20 reads and parses each certificate that
// NODE_EXTRA_CA_CERTS names at every start, whether or not the process makes a TLS connection
// (Node 22 and later, only once one asks). Where it names the system's whole bundle, as on the
// machines steward is built on (about 140 certificates), that was 40 ms of CPU for each of the
// thousands of node processes of a run: two minutes of a run on Node 20. No test reaches a TLS
// server it did not start itself except npm, which the package tests run to fetch the Node.js
// they ship; npm takes the same file as its own `cafile`. So the test processes start without
// the variable, and npm trusts what it trusted (unless npm_config_cafile already says otherwise).
function testEnv() {
  const env = { ...process.env, STEWARD_TEST_CACHE: cache };
  const extra = env.NODE_EXTRA_CA_CERTS;
  if (extra) {
    delete env.NODE_EXTRA_CA_CERTS;
    if (!env.npm_config_cafile && !env.NPM_CONFIG_CAFILE) env.npm_config_cafile = extra;
  }
  return env;
}
const TEST_ENV = testEnv();

const running = new Map(); // file -> start time (ms)

// The CPU seconds (user + system) of every child this process has reaped, its children's and
// theirs included (Linux's cutime and cstime, fields 16 and 17 of /proc/self/stat): read as each
// file's process exits, the step since the last exit is that file's CPU, a figure for finding
// where the suite's time goes. Two files that exit in the same turn of the event loop may swap
// part of theirs; null where /proc is not there.
const TICKS = 100; // USER_HZ, 100 on every Linux that Node.js runs on
function reapedCpuSeconds() {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').replace(/^.*\) /s, '').split(' ');
    return (Number(fields[13]) + Number(fields[14])) / TICKS;
  } catch {
    return null;
  }
}
let reaped = reapedCpuSeconds();
const rel = (f) => path.relative(root, f);

// One file: { file, seconds, counts, code, timedOut }, its output printed when it ends.
function runFile(file) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    running.set(file, t0);
    const counts = { pass: 0, fail: 0, cancelled: 0, skipped: 0 };
    // detached: its own process group, which a timeout kills whole (helpers, containers, servers).
    // The file is run as a script, not under `--test`, which would start a second node process
    // to run it in: node:test reports the same TAP and exits non-zero on a failure either way, and
    // that second start cost 0.17 s of CPU per file (60 s a run).
    const child = spawn(process.execPath, ['--test-reporter=tap', '--test-reporter-destination=stdout', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: TEST_ENV,
    });
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, FILE_TIMEOUT_S * 1000);
    let cpu = null;
    // 'exit' comes right after the process is reaped; 'close' (when its pipes are drained) later.
    child.on('exit', () => {
      const now = reapedCpuSeconds();
      if (now !== null && reaped !== null) cpu = now - reaped;
      reaped = now;
    });
    const done = (code) => {
      clearTimeout(timer);
      running.delete(file);
      const seconds = (Date.now() - t0) / 1000;
      const text = Buffer.concat(chunks).toString('utf8');
      for (const line of text.split('\n')) {
        const m = /^# (pass|fail|cancelled|skipped) (\d+)$/.exec(line);
        if (m) counts[m[1]] += Number(m[2]);
      }
      process.stdout.write(`# file: ${rel(file)} (${seconds.toFixed(1)} s${cpu === null ? '' : `, ${cpu.toFixed(1)} s of CPU`})\n${text}${text.endsWith('\n') || !text ? '' : '\n'}`);
      if (timedOut) process.stdout.write(`not ok - ${rel(file)} was still running after ${FILE_TIMEOUT_S} s and was killed; its output so far is above\n`);
      resolve({ file, seconds, cpu, counts, code: timedOut ? 1 : (code ?? 1), timedOut });
    };
    child.on('error', (err) => {
      chunks.push(Buffer.from(`cannot run ${file}: ${err.message}\n`));
      done(1);
    });
    child.on('close', (code) => done(code));
  });
}

async function pool(files, concurrency) {
  const results = [];
  let next = 0;
  const worker = async () => {
    while (next < files.length) results.push(await runFile(files[next++]));
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));
  return results;
}

// The files that take longest in wall time, in that order, start first, the rest in path order
// after them: a long file started last would run alone at the end with the other slots idle
// (in CI's runs the quick bench alone took 120-270 s, the launcher's crash explorations 155-275 s,
// and the container and compatibility files 60-450 s each). A name is a substring of the file's
// path; a name no file has is ignored.
const SLOWEST = [
  'bench/run-all-quick',
  'crash/explore-self-launcher',
  'package/deb-self-update-power-cut',
  'systemd/steward-launcher-kill',
  'package/fleet-self-rollout',
  'package/deb-self-update.',
  'e2e/systemd/socket-handover-under-systemd',
  'e2e/systemd/fleet-under-systemd',
  'compat/previous-release-fleet',
  'e2e/self-update-trial',
  'e2e/kill-points',
  'e2e/socket-handover',
  'package/deb-upgrade-keeps-apps-running',
  'package/control-deb-install-upgrade-purge',
  'security/refused-receipt-flood-before-relay',
  'systemd/steward-launcher-garbage',
  // Late in path order (security/ after every other folder): the TUF attack files through a real
  // agent, 40-60 s each then, ended a Node 24 run alone in its last minute. Since their releases
  // stay up the stableMs they ask for (test/fixtures/app-releases.ts), 15-30 s each and
  // fleet-downgrade-authorized 23 s, fleet-tuf-rotation-downgrade-stale still 60 s (Node 20).
  'e2e/fleet-tuf-rotation-downgrade-stale',
  'e2e/watch-window.',
  'e2e/fleet-downgrade-authorized',
  'security/downgrade-without-a-valid-authorization',
  'security/tuf-',
  'e2e/systemd/',
  'package/',
  'crash/explore-',
];

function startSlowestFirst(list) {
  const rank = (f) => {
    const i = SLOWEST.findIndex((s) => rel(f).includes(s));
    return i < 0 ? SLOWEST.length : i;
  };
  return list.map((f, i) => ({ f, i, r: rank(f) })).sort((a, b) => a.r - b.r || a.i - b.i).map((x) => x.f);
}

let files = walk(testDir, []);
if (only.length) files = files.filter((f) => only.some((o) => f.includes(o)));
if (files.length === 0) {
  console.error(only.length ? `no test file under dist/test matches ${only.join(' or ')}` : 'no test files found under dist/test (was `npm run build` run?)');
  process.exit(1);
}
const t0 = Date.now();
const progress = setInterval(() => {
  const now = Date.now();
  const list = [...running].map(([f, s]) => `${rel(f)} (${Math.round((now - s) / 1000)} s)`);
  process.stderr.write(`tests: ${Math.round((now - t0) / 1000)} s in; running ${list.join(', ') || 'nothing'}\n`);
}, PROGRESS_S * 1000);
progress.unref();

const serial = files.filter((f) => path.basename(f).includes('.serial.'));
const parallel = startSlowestFirst(files.filter((f) => !serial.includes(f)));
const results = [...(await pool(parallel, CONCURRENCY)), ...(await pool(serial, 1))];
clearInterval(progress);

const total = { pass: 0, fail: 0, skipped: 0 };
for (const r of results) {
  total.pass += r.counts.pass;
  total.fail += r.counts.fail + r.counts.cancelled; // a test its timeout cancelled failed too
  total.skipped += r.counts.skipped;
}
// A file that exited non-zero with no failing test counted (a crash outside any test, a kill)
// is a failure of its own.
const failedFiles = results.filter((r) => r.code !== 0);
for (const r of failedFiles) if (r.counts.fail + r.counts.cancelled === 0) total.fail += 1;
const slowest = [...results].sort((a, b) => b.seconds - a.seconds).slice(0, 10);
console.log(`\n# slowest files: ${slowest.map((r) => `${rel(r.file)} ${r.seconds.toFixed(0)} s`).join(', ')}`);
const costliest = results.filter((r) => r.cpu !== null).sort((a, b) => b.cpu - a.cpu).slice(0, 10);
if (costliest.length) console.log(`# most CPU: ${costliest.map((r) => `${rel(r.file)} ${r.cpu.toFixed(0)} s`).join(', ')}`);
if (failedFiles.length) console.log(`# failed files: ${failedFiles.map((r) => `${rel(r.file)}${r.timedOut ? ' (timed out)' : ` (exit ${r.code})`}`).join(', ')}`);
console.log(`# ${files.length} files in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
console.log(`${total.pass} passed, ${total.fail} failed, ${total.skipped} skipped`);
process.exit(failedFiles.length ? 1 : 0);
