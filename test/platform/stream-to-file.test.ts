import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { Readable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { streamToFile } from '../../src/platform/stream-to-file.js';
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
