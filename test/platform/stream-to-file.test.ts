import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { Readable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { streamToFile, streamToMemory } from '../../src/platform/stream-to-file.js';
import { StewardError } from '../../src/core/errors.js';
import { assertFailsClean, useFetchFixture } from '../helpers/fetch-server.js';
import { sri } from '../helpers/host.js';

// An upload of an announced size stored into a file, hashing while writing (stream-to-file.ts).

const { dest } = useFetchFixture(after);
const body = randomBytes(200 * 1024);

describe('streamToFile', () => {
  test('an upload of exactly the announced size is stored with its integrity', async () => {
    const destFile = dest();
    const r = await streamToFile({ stream: Readable.from([body.subarray(0, 5000), body.subarray(5000)]), destFile, expectedBytes: body.length });
    assert.deepEqual(r, { bytes: body.length, integrity: sri(body) });
    assert.deepEqual(await fsp.readFile(destFile), body);
  });

  test('an upload shorter than announced fails and leaves no file', async () => {
    const destFile = dest();
    await assertFailsClean(streamToFile({ stream: Readable.from([body.subarray(0, 10)]), destFile, expectedBytes: 11 }), 'FETCH_FAILED', /shorter/, destFile);
  });

  test('an upload larger than announced fails and leaves no file', async () => {
    const destFile = dest();
    await assertFailsClean(streamToFile({ stream: Readable.from([body.subarray(0, 12)]), destFile, expectedBytes: 11 }), 'FETCH_FAILED', /larger/, destFile);
  });

  test('an aborted upload stops and leaves no file', async () => {
    const destFile = dest();
    const stream = new Readable({ read() {} });
    stream.push(body.subarray(0, 10));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    await assertFailsClean(streamToFile({ stream, destFile, expectedBytes: 100, signal: ac.signal }), 'FETCH_FAILED', /aborted/, destFile);
  });
});

describe('streamToMemory', () => {
  async function refused(p: Promise<unknown>, re: RegExp): Promise<void> {
    const err = await p.then(
      () => assert.fail('expected the upload to fail'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof StewardError, String(err));
    assert.equal(err.code, 'FETCH_FAILED', err.message);
    assert.match(err.message, re);
  }

  test('an upload of exactly the announced size is held in one Buffer of its own with its integrity', async () => {
    const r = await streamToMemory({ stream: Readable.from([body.subarray(0, 5000), body.subarray(5000)]), expectedBytes: body.length });
    assert.deepEqual({ bytes: r.bytes, integrity: r.integrity }, { bytes: body.length, integrity: sri(body) });
    assert.deepEqual(r.archive, body);
    assert.equal(r.archive.buffer.byteLength, body.length, 'the Buffer owns its whole ArrayBuffer (it is transferred to the worker)');
  });

  test('a short, a long and an aborted upload are refused as streamToFile refuses them', async () => {
    await refused(streamToMemory({ stream: Readable.from([body.subarray(0, 10)]), expectedBytes: 11 }), /the upload is shorter than its announced size \(10 of 11 bytes\)/);
    await refused(streamToMemory({ stream: Readable.from([body.subarray(0, 12)]), expectedBytes: 11 }), /the upload is larger than its announced size \(11 bytes\)/);
    const stream = new Readable({ read() {} });
    stream.push(body.subarray(0, 10));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    await refused(streamToMemory({ stream, expectedBytes: 100, signal: ac.signal }), /aborted/);
    await refused(streamToMemory({ stream: Readable.from([body.subarray(0, 5)]), expectedBytes: 5, signal: AbortSignal.abort() }), /aborted/);
  });
});
