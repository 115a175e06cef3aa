import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { it } from 'node:test';
import { hasZstd } from '../../src/core/compression.js';
import { controlCli, startControlDaemon } from '../helpers/fleet.js';
import { patchRelease } from '../helpers/patch-releases.js';
import { describeEachBackend } from '../helpers/store-backends.js';

// docs/design.md §20.5: `release add --index` makes static patches to the new version from the 2
// newest earlier indexed ones where the runtime has zstd (and says so, or why not, in its output
// and --json); the control plane serves them with Range; `release remove` takes a version's
// patches, to and from it, with its index.
function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

describeEachBackend((backend) => {
  it(`makes patches from the 2 newest indexed versions${hasZstd() ? '' : ' (none here: this runtime has no zstd)'}, serves them with Range, and release remove takes them`, async (t) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-release-patches-'));
    const db = await backend.createDatabase();
    const art = path.join(dir, 'artifacts');
    const control = await startControlDaemon(db, 0, 1, { env: { STEWARD_CONTROL_ARTIFACTS: art } });
    t.after(async () => {
      await control.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const cli = (args: string[]) => controlCli(db, ['--artifacts', art, ...args]);
    const keys = await cli(['keys', 'create', '--out', path.join(dir, 'keys'), '--json']);
    assert.equal(keys.code, 0, keys.stderr);
    const add = async (v: string, json: boolean) => {
      const file = path.join(dir, `web-${v}.tgz`);
      writeFileSync(file, patchRelease(v));
      const r = await cli(['release', 'add', 'web', v, '--file', file, '--base-url', control.url, '--key', keys.json.privateKeyFile, '--index', ...(json ? ['--json'] : [])]);
      assert.equal(r.code, 0, r.stderr);
      return r;
    };
    assert.deepEqual((await add('1.0.0', true)).json.patches, { from: [], notes: hasZstd() ? [] : [`no patches: this runtime (Node ${process.versions.node}) has no zstd (Node 22.15 and later have it)`] });
    await add('1.1.0', true);
    const third = await add('1.2.0', true);
    const human = await add('1.3.0', false);
    const web = path.join(art, 'web');
    if (!hasZstd()) {
      assert.deepEqual(third.json.patches.from, []);
      assert.match(human.stdout, /no patches: this runtime \(Node [0-9.]+\) has no zstd/);
      assert.deepEqual(readdirSync(web).filter((n) => n.endsWith('.patch')), []);
      return;
    }
    assert.deepEqual(third.json.patches, { from: ['1.1.0', '1.0.0'], notes: [] });
    assert.match(human.stdout, /^ {2}patches from 1\.2\.0, 1\.1\.0$/m);
    assert.deepEqual(readdirSync(web).filter((n) => n.endsWith('.patch')).sort(), ['1.1.0.from-1.0.0.patch', '1.2.0.from-1.0.0.patch', '1.2.0.from-1.1.0.patch', '1.3.0.from-1.1.0.patch', '1.3.0.from-1.2.0.patch']);
    const deltas = () => readdirSync(web).filter((n) => n.includes('.index.json.from-')).sort();
    assert.deepEqual(deltas(), ['1.1.0.index.json.from-1.0.0.zst', '1.2.0.index.json.from-1.0.0.zst', '1.2.0.index.json.from-1.1.0.zst', '1.3.0.index.json.from-1.1.0.zst', '1.3.0.index.json.from-1.2.0.zst']);
    const delta = await get(`${control.url}/v1/artifacts/web/1.3.0.index.json.from-1.2.0.zst`);
    assert.equal(delta.status, 200);
    assert.equal(delta.headers['content-type'], 'application/zstd');

    const url = `${control.url}/v1/artifacts/web/1.3.0.from-1.2.0.patch`;
    const whole = await get(url);
    assert.equal(whole.status, 200);
    assert.equal(whole.headers['accept-ranges'], 'bytes');
    const part = await get(url, { range: 'bytes=10-' });
    assert.equal(part.status, 206);
    assert.equal(part.headers['content-range'], `bytes 10-${whole.body.length - 1}/${whole.body.length}`);
    assert.deepEqual(part.body, whole.body.subarray(10));
    assert.equal((await get(`${control.url}/v1/artifacts/web/1.3.0.from-1.0.0.patch`)).status, 404, 'no patch from the third newest');

    const removed = await cli(['release', 'remove', 'web', '1.2.0', '--json']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual(readdirSync(web).filter((n) => n.endsWith('.patch')).sort(), ['1.1.0.from-1.0.0.patch', '1.3.0.from-1.1.0.patch']);
    assert.deepEqual(deltas(), ['1.1.0.index.json.from-1.0.0.zst', '1.3.0.index.json.from-1.1.0.zst']);
    assert.ok(!readdirSync(web).some((n) => n.startsWith('1.2.0.index.json')), 'the index, its compressed copies and deltas are gone');
    assert.equal((await get(url)).status, 404);
    assert.ok(existsSync(path.join(web, '1.3.0.index.json.zst')));
  });
});
