import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { buildProgram } from '../../src/cli/program.js';
import { REPO } from '../helpers/host.js';

// `agentctl completion bash` (issue 19 item 4): the script is made from the commander program, so
// these tests ask bash itself what it completes, through the script exactly as printed.

function agentctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(REPO, 'bin', 'agentctl.js'), ...args], (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

const hasBash = existsSync('/bin/bash');
let script: string | undefined;
async function completionScript(): Promise<string> {
  if (script === undefined) {
    const r = await agentctl(['completion', 'bash']);
    assert.equal(r.code, 0, r.stderr);
    script = r.stdout;
  }
  return script;
}

// bash's stdin is /dev/null, not the socket that Node makes of a 'pipe': bash reads ~/.bashrc when
// its stdin is a socket and SHLVL is under 2 (it takes itself for a shell sshd started), so a run
// started where SHLVL is 0 had every bash here read root's ~/.bashrc, which on this project's
// machines runs `pyenv init`: ~100 processes and 0.8 s of CPU per bash, and answers that depended
// on whatever that file does.
const BASH_STDIO: ['ignore', 'pipe', 'pipe'] = ['ignore', 'pipe', 'pipe'];

// What bash offers for each command line of `lines` (the last word of each the one completed), all
// asked of one bash, in the folder dir: the script is sourced once, then _agentctl runs for each
// line with COMP_WORDS and COMP_CWORD set as bash sets them (it resets COMPREPLY itself). One bash
// rather than one per line: a bash start is most of the cost of a line.
async function completeAll(lines: string[][]): Promise<string[][]> {
  const file = path.join(dir, 'agentctl.bash');
  writeFileSync(file, await completionScript());
  const prog = `source "$1"; shift
while (( $# > 0 )); do
  n=$1; shift
  COMP_WORDS=(agentctl "\${@:1:n}"); shift "$n"
  COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 ))
  _agentctl
  printf '%s\\n' "\${COMPREPLY[@]}"
  printf '\\036\\n'
done`;
  const args = lines.flatMap((words) => [String(words.length), ...words]);
  const out = execFileSync('/bin/bash', ['-c', prog, 'bash', file, ...args], { encoding: 'utf8', cwd: dir, stdio: BASH_STDIO });
  const records = out.split('\x1e\n');
  assert.equal(records.pop(), '', 'one record per line asked');
  assert.equal(records.length, lines.length);
  return records.map((r) => r.split('\n').filter((l) => l !== ''));
}

const complete = async (words: string[]): Promise<string[]> => (await completeAll([words]))[0]!;

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-completion-'));
const root = path.join(dir, 'root');
for (const [app, versions] of [['web', ['1.0.0', '1.1.0']], ['api', ['2.0.0']]] as const) {
  for (const v of versions) mkdirSync(path.join(root, 'opt/steward/apps', app, 'versions', v), { recursive: true });
}
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('agentctl completion bash prints a script bash accepts, and completes every command --help lists', { skip: !hasBash && 'no /bin/bash here' }, async () => {
  execFileSync('/bin/bash', ['-n', '-c', await completionScript()], { stdio: BASH_STDIO });
  const program = await buildProgram();
  const names = program.commands.map((c) => c.name()).filter((n) => n !== 'help');
  assert.ok(names.includes('completion') && names.includes('status') && names.length > 10, names.join(' '));
  assert.deepEqual((await complete([''])).sort(), [...names].sort());
  assert.deepEqual((await complete(['st'])).sort(), ['stage', 'start', 'status', 'stop']);
  // Each command's own options, from its definition.
  const commands = program.commands.filter((x) => x.name() !== 'help');
  const offers = await completeAll(commands.map((c) => [c.name(), '--']));
  for (const [i, c] of commands.entries()) {
    const offered = offers[i]!;
    // A hidden option (install --packaged, the package's postinst's) is neither in --help nor offered.
    for (const o of c.options) if (o.long) assert.equal(offered.includes(o.long), !o.hidden, `${c.name()} ${o.long}: offered ${offered.join(' ')}`);
    assert.ok(offered.includes('--json'), `${c.name()} takes the program's --json too`);
  }
  assert.deepEqual(await complete(['--ro']), ['--root']);
});

test('an <app> completes with the apps under the root prefix, a <version> and --to with that app\'s versions', { skip: !hasBash && 'no /bin/bash here' }, async () => {
  const [apps, w, versions, to, afterJson, past, outside] = await completeAll([
    ['--root', root, 'rollback', ''],
    ['--root', root, 'status', 'w'],
    ['--root', root, 'update', 'web', ''],
    ['--root', root, 'rollback', 'web', '--to', '1.1'],
    ['--root', root, '--json', 'releases', 'a'],
    ['--root', root, 'releases', 'web', ''],
    ['--root', root, 'update', '../web', ''],
  ]);
  assert.deepEqual(apps!.sort(), ['api', 'web']);
  assert.deepEqual(w, ['web']);
  assert.deepEqual(versions!.sort(), ['1.0.0', '1.1.0']);
  assert.deepEqual(to, ['1.1.0']);
  // The global option's value is not taken for the command word.
  assert.deepEqual(afterJson, ['api']);
  // Past the arguments a command takes, nothing.
  assert.deepEqual(past, []);
  // An app name that would leave the apps folder is not looked up.
  assert.deepEqual(outside, []);
});

test('an option whose value is a file completes with file names', { skip: !hasBash && 'no /bin/bash here' }, async () => {
  writeFileSync(path.join(dir, 'web-1.2.0.tgz'), '');
  assert.deepEqual(await complete(['update', 'web', '1.2.0', '--file', 'web-1.2']), ['web-1.2.0.tgz']);
});

test('a folder named like a command substitution is offered as a name, never run', { skip: !hasBash && 'no /bin/bash here' }, async () => {
  // Relative to the shell's folder (dir), so that the names hold no slash.
  const name = '$(touch PWNED)';
  const apps = path.join(root, 'opt/steward/apps');
  mkdirSync(path.join(apps, name, 'versions', '`touch PWNED`'), { recursive: true });
  try {
    const [names, versions] = await completeAll([
      ['--root', root, 'status', '$'],
      ['--root', root, 'update', name, ''],
    ]);
    assert.deepEqual(names, [name]);
    assert.deepEqual(versions, ['`touch PWNED`']);
    assert.equal(existsSync(path.join(dir, 'PWNED')), false, 'a word from the host was expanded');
  } finally {
    rmSync(path.join(apps, name), { recursive: true, force: true });
  }
});

test('agentctl completion for another shell is a usage error naming the shells it supports', async () => {
  const r = await agentctl(['completion', 'zsh']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /completion zsh: the shells supported are bash/);
  const j = await agentctl(['completion', 'fish', '--json']);
  assert.equal(j.code, 2);
  assert.equal((JSON.parse(j.stdout) as { error: { code: string } }).error.code, 'USAGE');
  const ok = await agentctl(['completion', 'bash', '--json']);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match((JSON.parse(ok.stdout) as { script: string }).script, /^complete -F _agentctl agentctl$/m);
});
