import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { buildControlProgram } from '../../src/control/cli/main.js';
import { newControlProgram } from '../../src/control/cli/program-base.js';
import { RUNNERS } from '../../src/control/cli/start.js';

// steward-control imports only the module of the command it runs (src/cli/lazy-commands.ts);
// these tests hold that every command and subcommand is still reachable that way, the same as in
// the full program, and that help and errors still see them all.

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

// Every command under `cmd` with its words, options and description, for comparing two programs.
function shape(cmd: Command, prefix = ''): string[] {
  return cmd.commands.flatMap((c) => [`${prefix}${c.name()} ${JSON.stringify(c.description())} ${c.options.map((o) => o.flags).join(',')}`, ...shape(c, `${prefix}${c.name()} `)]);
}

test('every command, named alone, is registered without the others and the same as in the full program', async () => {
  const full = await buildControlProgram([]);
  const names = full.commands.map((c) => c.name());
  assert.ok(names.length >= 14, names.join(' '));
  for (const name of names) {
    // The program options with a value come before the command word, and are not it.
    const one = await buildControlProgram(['--db', 'serve', '--server', 'https://x', name, 'x']);
    assert.deepEqual(one.commands.map((c) => c.name()), [name], `steward-control ${name} registers only itself`);
    const a = full.commands.find((c) => c.name() === name) as Command;
    assert.deepEqual(shape(one), [`${name} ${JSON.stringify(a.description())} ${a.options.map((o) => o.flags).join(',')}`, ...shape(a, `${name} `)]);
  }
});

test('each command runner registers, for each word it is listed under, that command alone, as the full program defines it', async () => {
  const full = await buildControlProgram([]);
  const listed: string[] = [];
  for (const [names, load] of RUNNERS) {
    const runner = await load();
    // A runner is chosen by these words (start.ts): its module must define exactly those.
    assert.deepEqual(Object.keys(runner.commands).sort(), [...names].sort(), `the runner of ${names.join(', ')}`);
    for (const name of names) {
      listed.push(name);
      const program = newControlProgram();
      (runner.commands[name] as (p: Command) => void)(program);
      assert.deepEqual(program.commands.map((c) => c.name()), [name], `the runner of ${name} registers it alone, as main.ts does`);
      const a = full.commands.find((c) => c.name() === name) as Command;
      assert.deepEqual(shape(program), [`${name} ${JSON.stringify(a.description())} ${a.options.map((o) => o.flags).join(',')}`, ...shape(a, `${name} `)], name);
    }
  }
  // Every command has a runner: only help, a word that names no command and no command run main.ts.
  assert.deepEqual(listed.sort(), full.commands.map((c) => c.name()).sort());
});

test('help, an unknown command and no command register every command, in the order of --help', async () => {
  const all = (await buildControlProgram([])).commands.map((c) => c.name());
  assert.deepEqual(all.slice(0, 3), ['init', 'migrate', 'serve']);
  for (const argv of [['--help'], ['help', 'rollout'], ['bogus'], ['--json'], ['--db', 'x.db']]) {
    assert.deepEqual((await buildControlProgram(argv)).commands.map((c) => c.name()), all, argv.join(' '));
  }
});

test('the installed launcher: --version, a named command, help and a typo answer as before', () => {
  const bin = path.join(repo, 'bin', 'steward-control.js');
  const run = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' });
  const version = (JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { version: string }).version;
  assert.equal(run('--version').stdout, `${version}\n`);
  const help = run('--help');
  assert.equal(help.status, 0, help.stderr);
  for (const name of ['serve', 'rollout', 'audit']) assert.match(help.stdout, new RegExp(`^  ${name}\\b`, 'm'));
  const sub = run('rollout', '--help');
  assert.equal(sub.status, 0, sub.stderr);
  assert.match(sub.stdout, /^ {2}start /m);
  const typo = run('rollot');
  assert.equal(typo.status, 2, typo.stderr);
  assert.match(typo.stderr, /rollout/, 'the typo is answered with the command it may mean');
});
