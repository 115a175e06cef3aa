import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RUNNERS } from '../../src/cli/main.js';
import { newProgram } from '../../src/cli/program-base.js';
import { buildProgram, commandWord } from '../../src/cli/program.js';

// agentctl imports only the module of the command it runs; these tests hold that every
// command is still reachable that way and that help and errors still see them all.

test('the command word skips the global options and their values', () => {
  assert.equal(commandWord(['--root', '/r', '--socket', '/s', '--json', 'releases', 'web']), 'releases');
  assert.equal(commandWord(['--root=/r', 'status']), 'status');
  assert.equal(commandWord(['--json']), undefined);
  assert.equal(commandWord(['--root', 'status']), undefined, 'a value is not a command');
});

test('every command, named alone, is registered without the others and the same as in the full program', async () => {
  const full = await buildProgram([]);
  const names = full.commands.map((c) => c.name());
  assert.ok(names.length >= 16, names.join(' '));
  for (const name of names) {
    const one = await buildProgram(['--root', '/r', name, 'x']);
    // Its module may register its siblings too (rollback and recover), but not the others.
    assert.ok(one.commands.length < names.length, `agentctl ${name} registers ${one.commands.length} commands`);
    const a = full.commands.find((c) => c.name() === name);
    const b = one.commands.find((c) => c.name() === name);
    assert.ok(b, `agentctl ${name} is registered when named`);
    assert.equal(b?.description(), a?.description());
    assert.deepEqual(b?.options.map((o) => o.flags), a?.options.map((o) => o.flags));
  }
});

test('help, an unknown command and no command register every command', async () => {
  const all = (await buildProgram([])).commands.length;
  for (const argv of [['--help'], ['help'], ['bogus'], ['--root', '/r']]) {
    assert.equal((await buildProgram(argv)).commands.length, all, argv.join(' '));
  }
});

test('the version alone registers no command; with help or a command it is as before', async () => {
  const all = (await buildProgram([])).commands.length;
  for (const argv of [['--version'], ['-V'], ['--json', '-V'], ['--root', '/r', '--version']]) {
    assert.equal((await buildProgram(argv)).commands.length, 0, argv.join(' '));
  }
  assert.equal((await buildProgram(['--version', '--help'])).commands.length, all);
  assert.equal((await buildProgram(['-V', 'bogus'])).commands.length, all);
  assert.ok((await buildProgram(['status', '--version'])).commands.some((c) => c.name() === 'status'));
});

test("each command runner registers the words it is listed under, as the full program defines them", async () => {
  const full = await buildProgram([]);
  const listed = new Set<string>();
  for (const [names, load] of RUNNERS) {
    const program = newProgram();
    (await load()).register(program);
    // A runner is chosen by these words (main.ts): its module must define exactly those.
    assert.deepEqual(program.commands.map((c) => c.name()).sort(), [...names].sort(), `the runner of ${names.join(', ')}`);
    for (const name of names) {
      listed.add(name);
      const a = full.commands.find((c) => c.name() === name);
      const b = program.commands.find((c) => c.name() === name);
      assert.equal(b?.description(), a?.description(), name);
      assert.deepEqual(b?.options.map((o) => o.flags), a?.options.map((o) => o.flags), name);
      assert.deepEqual(b?.registeredArguments.map((x) => x.name()), a?.registeredArguments.map((x) => x.name()), name);
    }
  }
  // The rest run the full program's way (program.ts), which registers what they name.
  const rest = full.commands.map((c) => c.name()).filter((n) => !listed.has(n));
  assert.deepEqual(rest, ['doctor', 'install', 'uninstall', 'completion']);
});
