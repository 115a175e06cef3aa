// Property test of the real steward-helper on a temp root (issue 7 item 5): near-valid and
// arbitrary requests on both sockets never end the process, every answer carries a closed
// reason code (never INTERNAL), and a request the API refuses (BAD_REQUEST, FORBIDDEN,
// UNKNOWN_APP) leaves every file under the root byte for byte as it was, but for the refused
// receipt of an update attempt that carried an attemptId.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { isReasonCode } from '../../src/core/errors.js';
import { responseSchema } from '../../src/protocol/schemas.js';
import { rawExchange } from '../helpers/api-server-harness.js';
import { useHost } from '../helpers/host-fixture.js';
import { makeReleaseKey, manifestFor, type HelperProcess } from '../helpers/host.js';
import { nearValidJsonBytes } from './mutate.js';
import { checkProperty, guarded } from './property-run.js';
import { validRequests } from './requests.js';

// Codes the API answers before any op touches the host: nothing may change.
const GATE_CODES = new Set(['BAD_REQUEST', 'FORBIDDEN', 'UNKNOWN_APP']);

const host = useHost(after);
let helper: HelperProcess;
let bases: Array<Record<string, unknown>>;

before(async () => {
  const key = makeReleaseKey(host, ['web']);
  // A manifest that verifies; its URL refuses connections, so an update that passes every gate
  // fails fast at the fetch instead of waiting on the network.
  const manifest = key.sign(manifestFor('web', '1.2.0', Buffer.from('x'), { url: 'http://127.0.0.1:9/web-1.2.0.tgz' }));
  // No noWait: an accepted background attempt would change the root after its answer.
  bases = validRequests(manifest).map(({ noWait: _n, ...r }) => r);
  helper = await host.startHelper();
});

// Path, type, mode and content hash of everything under the root but the run folder (sockets, lock).
async function snapshot(dir: string, out = new Map<string, string>()): Promise<Map<string, string>> {
  for (const name of (await fsp.readdir(dir)).sort()) {
    const p = path.join(dir, name);
    if (p === host.paths.runDir) continue;
    const st = await fsp.lstat(p);
    const mode = (st.mode & 0o7777).toString(8);
    if (st.isDirectory()) {
      out.set(p, `d ${mode}`);
      await snapshot(p, out);
    } else if (st.isSymbolicLink()) out.set(p, `l ${await fsp.readlink(p)}`);
    else out.set(p, `f ${mode} ${createHash('sha256').update(await fsp.readFile(p)).digest('hex')}`);
  }
  return out;
}

test('the real helper refuses any near-valid request with a closed code and, at the API gate, changes no file', async () => {
  const wire = fc.oneof(
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 120 }).map((a) => Buffer.concat([Buffer.from(a), Buffer.from('\n')])) },
    { weight: 6, arbitrary: nearValidJsonBytes(fc.constantFrom(...bases)).map((b) => Buffer.concat([b, Buffer.from('\n')])) },
    // Valid requests naming an app that is not configured, or another version: they pass every
    // schema and reach the handlers' own checks.
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom(...bases), fc.constantFrom('web', 'api', 'web-2'), fc.constantFrom('1.2.0', '2.0.0', '0.0.1')).map(([r, app, version]) =>
        Buffer.from(JSON.stringify({ ...r, ...('app' in r ? { app } : {}), ...('version' in r ? { version } : {}) }) + '\n'),
      ),
    },
  );
  let baseline = await snapshot(host.root);
  const seen = new Map<string, number>();
  await checkProperty(
    'helper process: gate rejections change nothing',
    fc.asyncProperty(wire, fc.constantFrom('adminSock' as const, 'helperSock' as const), guarded(async (bytes, sock) => {
      const answer = await rawExchange(host.paths[sock], bytes, { end: true });
      assert.equal(helper.child.exitCode, null, `the helper exited: ${helper.stderr().slice(-3000)}`);
      const final = answer.lines.at(-1);
      assert.ok(final, `no answer (client error ${answer.errorCode})`);
      assert.ok(responseSchema.safeParse(final).success, JSON.stringify(final));
      const code = final.ok ? 'ok' : (final.error.code as string);
      seen.set(code, (seen.get(code) ?? 0) + 1);
      if (!final.ok) {
        assert.ok(isReasonCode(code));
        assert.notEqual(code, 'INTERNAL', final.error.message);
      }
      const now = await snapshot(host.root);
      // An op that ran may change the host (a refused update writes its receipt): the next baseline,
      // set also after a failure so that each shrinking attempt is judged against the root it found.
      const before = baseline;
      baseline = now;
      if (GATE_CODES.has(code)) {
        // An update attempt the helper does not take still ends in its refused receipt (docs/design.md §6):
        // the receipts and their seq may change, and nothing else.
        const receipt = (p: string) => path.dirname(p) === host.paths.receiptsDir || p === host.paths.receiptSeq;
        const rest = (m: Map<string, string>) => new Map([...m].filter(([p]) => !final.error.attemptId || !receipt(p)));
        assert.deepEqual(rest(now), rest(before), `a ${code} rejection changed files: ${final.error.message}`);
      }
    })),
    400,
  );
  process.stdout.write(`# answers by code: ${JSON.stringify(Object.fromEntries([...seen].sort()))}\n`);
  assert.ok((seen.get('BAD_REQUEST') ?? 0) > 0 && (seen.get('FORBIDDEN') ?? 0) > 0, 'the inputs never reached the gates');
});
