import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import zlib from 'node:zlib';
import { hasZstd } from '../../src/core/compression.js';
import { packHeader } from '../../src/core/object-pack.js';
import { encodePatchHeader, parsePatchHeader, patchDictionary, patchHeaderLength, type PatchHeader } from '../../src/core/object-patch.js';
import { assertNothingUntrusted, objectAttackHost } from '../helpers/object-attacks.js';
import { stageIndexed, type ObjectServer } from '../helpers/object-server.js';
import { patchRelease } from '../helpers/patch-releases.js';

// docs/design.md §20.5: a static patch is checked before and while it is decoded: its header
// against the signed index and the host's objects, its window and output against caps, every
// object it decodes against its sha256. A bad one is refused with a reason code, leaves nothing
// a later stage trusts, and the stage takes the pack.
type Z = { zstdCompressSync(b: Buffer, o: object): Buffer; constants: Record<string, number> };
const z = zlib as unknown as Z;
const NO_ZSTD = hasZstd() ? false : `this runtime (Node ${process.versions.node}) has no zstd: no patch is made or taken (objects-from-patch tests the pack path)`;

function split(patch: Buffer): { header: PatchHeader; body: Buffer } {
  const len = patchHeaderLength(patch.subarray(0, 4));
  return { header: parsePatchHeader(patch.subarray(4, 4 + len), 1_000_000), body: patch.subarray(4 + len) };
}

function objectBytes(srv: ObjectServer, sha: string): Buffer {
  return readFileSync(path.join(srv.artifactsDir, 'web', 'objects', sha));
}

// The patch's zstd body made again from `records`, with its header's dictionary.
function bodyOf(srv: ObjectServer, header: PatchHeader, records: Buffer, windowLog = 24): Buffer {
  const dictionary = Buffer.concat(patchDictionary(header.objects).map((b) => objectBytes(srv, b)));
  return z.zstdCompressSync(records, { dictionary, params: { [z.constants.ZSTD_c_windowLog as number]: windowLog } });
}

function recordsOf(srv: ObjectServer, header: PatchHeader, change: (i: number, b: Buffer) => Buffer = (_i, b) => b): Buffer {
  return Buffer.concat(header.objects.flatMap((o, i) => [packHeader(o.sha256, o.size), change(i, objectBytes(srv, o.sha256))]));
}

const cases: Array<[string, (srv: ObjectServer, patch: Buffer) => Buffer, string]> = [
  [
    'decodes to other bytes (each record the size its header says)',
    (srv, patch) => {
      const { header } = split(patch);
      const body = bodyOf(srv, header, recordsOf(srv, header, (i, b) => (i === 0 ? Buffer.from(b).fill(0x41, 0, Math.min(8, b.length)) : b)));
      return Buffer.concat([encodePatchHeader(header), body]);
    },
    'INTEGRITY_MISMATCH',
  ],
  [
    'a bomb: 64 MiB of zeros after its objects',
    (srv, patch) => {
      const { header } = split(patch);
      return Buffer.concat([encodePatchHeader(header), bodyOf(srv, header, Buffer.concat([recordsOf(srv, header), Buffer.alloc(64 * 1024 * 1024)]), 27)]);
    },
    'INTEGRITY_MISMATCH',
  ],
  [
    'a bomb: a frame that asks for a 1 GiB window',
    (srv, patch) => {
      const { header } = split(patch);
      // A zstd frame written by hand: no content size, a window descriptor of 2^30 (exponent
      // 20), then the records as one raw last block.
      const records = recordsOf(srv, header);
      const block = Buffer.alloc(3);
      block.writeUIntLE((records.length << 3) | 1, 0, 3);
      return Buffer.concat([encodePatchHeader(header), Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 20 << 3]), block, records]);
    },
    'UNSAFE_ARCHIVE',
  ],
  [
    'a header past the cap',
    (_srv, patch) => Buffer.concat([Buffer.from([0xff, 0xff, 0xff, 0xf0]), patch.subarray(4)]),
    'UNSAFE_ARCHIVE',
  ],
  [
    'a header naming an object not in the signed index',
    (srv, patch) => {
      const { header, body } = split(patch);
      void srv;
      return Buffer.concat([encodePatchHeader({ ...header, objects: [...header.objects, { sha256: randomBytes(32).toString('hex'), size: 5, base: null }] }), body]);
    },
    'INTEGRITY_MISMATCH',
  ],
  [
    'a header whose base the host lacks',
    (_srv, patch) => {
      const { header, body } = split(patch);
      const objects = header.objects.map((o, i) => (i === 0 ? { ...o, base: randomBytes(32).toString('hex') } : o));
      return Buffer.concat([encodePatchHeader({ ...header, objects }), body]);
    },
    'NOT_FOUND',
  ],
  [
    'a header that lacks an object the host needs',
    (_srv, patch) => {
      const { header, body } = split(patch);
      return Buffer.concat([encodePatchHeader({ ...header, objects: header.objects.slice(1) }), body]);
    },
    'NOT_FOUND',
  ],
  [
    'a patch from another version',
    (_srv, patch) => {
      const { header, body } = split(patch);
      return Buffer.concat([encodePatchHeader({ ...header, from: '0.1.0' }), body]);
    },
    'INTEGRITY_MISMATCH',
  ],
];

for (const [what, change, code] of cases) {
  test(`a patch that is ${what} is refused (${code}), nothing of it kept, and the pack brings the objects`, { skip: NO_ZSTD }, async (t) => {
    const { s, srv, cleanup } = await objectAttackHost();
    srv.offerPatches = true;
    t.after(cleanup);
    await stageIndexed(s, srv, '1.0.0', patchRelease('1.0.0'));
    let made: Buffer | null = null;
    srv.tamper.patch = (body) => (made ??= change(srv, body));
    const at = srv.requests.length;
    const r = await stageIndexed(s, srv, '1.1.0', patchRelease('1.1.0'));
    assert.equal(r.via, 'objects', JSON.stringify(r.fallback));
    assert.equal(r.patch?.used, false, JSON.stringify(r.patch));
    assert.equal(r.patch?.code, code, r.patch?.message);
    assert.ok(srv.requests.slice(at).some((q) => q === 'POST /v1/artifacts/web/1.1.0.pack'), 'the pack was fetched');
    await assertNothingUntrusted(s);
  });
}
