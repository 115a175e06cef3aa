import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, BIN, sri } from '../helpers/host.js';
import { releaseTgz } from '../fixtures/releases.js';

const host = useHost(after);
before(() => host.startHelper());

const BAR = '\x1b[2K'; // the bar clears its line before each redraw

function stageArgs(version: string): string[] {
  const tgz = releaseTgz('web', version);
  const file = path.join(host.scratch, `web-${version}.tgz`);
  writeFileSync(file, tgz);
  return ['--root', host.root, 'stage', 'web', version, '--file', file, '--integrity', sri(tgz), '--allow-unsigned'];
}

// Runs agentctl on a pseudo-terminal (util-linux `script`), as an operator would.
function onTty(args: string[]): string {
  const cmd = [process.execPath, BIN.agentctl, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  return execFileSync('script', ['-qec', cmd, '/dev/null'], { encoding: 'utf8' });
}

test('on a terminal agentctl stage draws a progress bar', () => {
  const out = onTty(stageArgs('1.0.0'));
  assert.ok(out.includes(BAR), `no bar in ${JSON.stringify(out)}`);
  assert.match(out, /web 1\.0\.0 staged/);
});

test('without a terminal, or with --json, there is no progress bar', async () => {
  const piped = await agentctl(host, stageArgs('1.1.0').slice(2));
  assert.equal(piped.code, 0, piped.stderr);
  assert.ok(!piped.stderr.includes(BAR) && !piped.stdout.includes(BAR));
  const json = onTty([...stageArgs('1.2.0'), '--json']);
  assert.ok(!json.includes(BAR), 'a --json run on a terminal draws no bar');
  assert.equal(JSON.parse(json.slice(json.indexOf('{'))).version, '1.2.0');
});
