import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { socketHelper } from '../../src/agent/helper-port.js';
import type { DesiredEntry } from '../../src/core/control-api.js';
import type { StewardError } from '../../src/core/errors.js';
import { mustParse } from '../../src/core/must-parse.js';
import * as z from '../../src/core/zod-mini.js';
import { updateRequestSchema } from '../../src/protocol/schemas.js';

// docs/design.md §21.3: an update handed on while the newer TUF metadata could not be fetched
// carries why (`trustFetchFailed`), with its directive only. A helper from before the key refuses
// it as unknown (BAD_REQUEST, no receipt), and the agent asks once more without it.
const { trustFetchFailed: _left, ...olderShape } = updateRequestSchema.def.shape;
const olderUpdate = z.strictObject(olderShape);

test('trustFetchFailed goes with a directed update, and is dropped for a helper from before it', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-agent-tff-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const sock = path.join(dir, 'helper.sock');
  const updates: Array<Record<string, unknown>> = [];
  let old = false;
  const server = net.createServer((s) => {
    let buf = '';
    s.on('data', (c) => {
      buf += c;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      const req = JSON.parse(buf.slice(0, nl));
      updates.push(req);
      try {
        mustParse(old ? olderUpdate : updateRequestSchema, req, 'BAD_REQUEST', 'invalid request');
      } catch (err) {
        const e = err as StewardError;
        return void s.end(JSON.stringify({ id: req.id, ok: false, error: { code: e.code, message: e.message } }) + '\n');
      }
      s.end(JSON.stringify({ id: req.id, ok: true, result: { attemptId: req.attemptId, app: req.app, accepted: true } }) + '\n');
    });
  });
  await new Promise<void>((r) => server.listen(sock, () => r()));
  t.after(() => server.close());
  const env = { payload: 'e30=', sig: 'c2ln', keyId: 'a'.repeat(16) };
  const entry = (attemptId: string, directed: boolean) => ({ app: 'web', version: '1.0.0', attemptId, manifest: env, ...(directed ? { directive: env } : {}) }) as DesiredEntry;
  const helper = socketHelper(sock);
  const why = 'CONTROL_PLANE_UNREACHABLE: no complete answer within 30000 ms';

  await helper.update(entry('a-1', true), undefined, undefined, why);
  assert.equal(updates.at(-1)!['trustFetchFailed'], why);
  await helper.update(entry('a-2', false), undefined, undefined, why);
  assert.equal(updates.at(-1)!['trustFetchFailed'], undefined, 'no directive: a helper on keys, nothing to say');

  old = true;
  const before = updates.length;
  await helper.update(entry('a-3', true), undefined, undefined, why);
  assert.equal(updates.length, before + 2, 'refused once as unknown, asked again');
  assert.equal(updates.at(-2)!['trustFetchFailed'], why);
  assert.equal(updates.at(-1)!['trustFetchFailed'], undefined);
  assert.deepEqual(updates.at(-1)!['directive'], env, 'the directive still goes');
});
