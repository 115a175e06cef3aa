import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadOrCreateHelperKey } from '../../src/host/helper-key.js';
import { generateKeyPair, keyIdOf, parsePublicKey } from '../../src/platform/keys.js';
import { makeHost, type TestHost } from '../helpers/host.js';

const mode = (p: string) => lstatSync(p).mode & 0o7777;

async function withHost(fn: (host: TestHost) => Promise<void>): Promise<void> {
  const host = makeHost();
  try {
    await fn(host);
  } finally {
    host.cleanup();
  }
}

function placeKey(host: TestHost, pem: string, fileMode = 0o600): void {
  mkdirSync(host.paths.keysDir, { recursive: true, mode: 0o700 });
  writeFileSync(host.paths.helperKey, pem, { mode: fileMode });
  chmodSync(host.paths.helperKey, fileMode);
}

test('a missing helper key is created once with its modes and helper.pub beside it', () =>
  withHost(async (host) => {
    const k = await loadOrCreateHelperKey(host.paths);
    assert.equal(mode(host.paths.keysDir), 0o700);
    assert.equal(mode(host.paths.helperKey), 0o600);
    assert.equal(mode(host.paths.helperPub), 0o644);
    assert.equal(mode(host.paths.varLib), 0o755);
    assert.equal(keyIdOf(parsePublicKey(readFileSync(host.paths.helperPub))), k.keyId);
    assert.match(readFileSync(host.paths.helperKey, 'utf8'), /^-----BEGIN PRIVATE KEY-----/);
    const again = await loadOrCreateHelperKey(host.paths);
    assert.equal(again.keyId, k.keyId);
  }));

test('an existing helper key is used and never overwritten', () =>
  withHost(async (host) => {
    const kp = generateKeyPair();
    placeKey(host, kp.privatePem);
    const k = await loadOrCreateHelperKey(host.paths);
    assert.equal(k.keyId, kp.keyId);
    assert.equal(readFileSync(host.paths.helperKey, 'utf8'), kp.privatePem);
    assert.equal(readFileSync(host.paths.helperPub, 'utf8'), kp.publicPem);
  }));

test('a helper.pub that does not match the private key is rewritten', () =>
  withHost(async (host) => {
    const kp = generateKeyPair();
    placeKey(host, kp.privatePem);
    writeFileSync(host.paths.helperPub, generateKeyPair().publicPem, { mode: 0o644 });
    const k = await loadOrCreateHelperKey(host.paths);
    assert.equal(k.keyId, kp.keyId);
    assert.equal(keyIdOf(parsePublicKey(readFileSync(host.paths.helperPub))), kp.keyId);
    assert.equal(mode(host.paths.helperPub), 0o644);
  }));

test('a helper key that is a symlink is refused and not replaced', () =>
  withHost(async (host) => {
    const kp = generateKeyPair();
    const elsewhere = path.join(host.scratch, 'helper.key');
    writeFileSync(elsewhere, kp.privatePem, { mode: 0o600 });
    mkdirSync(host.paths.keysDir, { recursive: true, mode: 0o700 });
    symlinkSync(elsewhere, host.paths.helperKey);
    await assert.rejects(loadOrCreateHelperKey(host.paths), { code: 'STATE_INVALID', message: /helper\.key: .*symlink/ });
    assert.ok(lstatSync(host.paths.helperKey).isSymbolicLink(), 'the symlink is left for the operator');
    assert.equal(readFileSync(elsewhere, 'utf8'), kp.privatePem);
  }));

test('a helper key that is not a regular file is refused', () =>
  withHost(async (host) => {
    mkdirSync(host.paths.helperKey, { recursive: true, mode: 0o700 });
    await assert.rejects(loadOrCreateHelperKey(host.paths), { code: 'STATE_INVALID', message: /not a regular file/ });
  }));

test('a helper key readable by group or others is refused', () =>
  withHost(async (host) => {
    placeKey(host, generateKeyPair().privatePem, 0o640);
    await assert.rejects(loadOrCreateHelperKey(host.paths), { code: 'STATE_INVALID', message: /mode 640/ });
    chmodSync(host.paths.helperKey, 0o604);
    await assert.rejects(loadOrCreateHelperKey(host.paths), { code: 'STATE_INVALID', message: /mode 604/ });
  }));

test('a helper key owned by another user is refused', { skip: process.getuid?.() !== 0 && 'needs root to chown' }, () =>
  withHost(async (host) => {
    placeKey(host, generateKeyPair().privatePem);
    const { chownSync } = await import('node:fs');
    chownSync(host.paths.helperKey, 65534, 0);
    await assert.rejects(loadOrCreateHelperKey(host.paths), { code: 'STATE_INVALID', message: /owned by uid 65534/ });
  }));

test('a helper key that does not parse is refused, never regenerated', () =>
  withHost(async (host) => {
    placeKey(host, 'not a key\n');
    await assert.rejects(loadOrCreateHelperKey(host.paths), { code: 'STATE_INVALID' });
    assert.equal(readFileSync(host.paths.helperKey, 'utf8'), 'not a key\n');
  }));
