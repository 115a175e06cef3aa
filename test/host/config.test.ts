import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, writeFileSync } from 'node:fs';
import { loadHostConfig, type AccountLookup } from '../../src/host/config.js';
import { StewardError } from '../../src/core/errors.js';
import { makeHost } from '../helpers/host.js';

const accounts: AccountLookup = {
  user: async (n) => ({ root: { name: 'root', id: 0 }, web: { name: 'web', id: 1001 } } as Record<string, { name: string; id: number }>)[n] ?? null,
  group: async (n) => ({ root: { name: 'root', id: 0 }, web: { name: 'web', id: 1001 } } as Record<string, { name: string; id: number }>)[n] ?? null,
};

async function loadWith(config: unknown, isRoot = false) {
  const host = makeHost();
  try {
    writeFileSync(host.paths.configFile, typeof config === 'string' ? config : JSON.stringify(config));
    return await loadHostConfig(host.paths.configFile, { isRoot, accounts });
  } finally {
    host.cleanup();
  }
}

async function configError(config: unknown, isRoot = false): Promise<StewardError> {
  try {
    await loadWith(config, isRoot);
  } catch (err) {
    assert.ok(err instanceof StewardError);
    assert.equal(err.code, 'CONFIG_INVALID');
    return err;
  }
  assert.fail('the config was accepted');
}

test('the config of docs/design.md §2 loads, with defaults filled in', async () => {
  const c = await loadWith({
    apps: {
      web: { runner: 'process', user: 'web', group: 'web', keepReleases: 3, restart: { baseMs: 5000, capMs: 300000, maxAttempts: 5, healthyMs: 600000 }, quarantine: { baseMs: 300000, capMs: 86400000 } },
      'steward-agent': { runner: 'unit', unit: 'steward-agent.service' },
    },
    controlPlane: { url: 'https://cp.example:8443', caFile: '/etc/steward/ca.pem' },
  });
  assert.equal(c.apps.web?.runner, 'process');
  assert.equal(c.apps['steward-agent']?.keepReleases, 3);
  assert.equal(c.api.idleTimeoutMs, 10_000);
  assert.equal(c.extract.maxEntries, 100_000);
  assert.equal(c.fetch.diskReserveBytes, 10 * 1024 * 1024);
});

test('controlPlane.url takes one URL, as before, or a list of up to 8 distinct URLs', async () => {
  assert.equal((await loadWith({ controlPlane: { url: 'https://cp.example:8443' } })).controlPlane?.url, 'https://cp.example:8443');
  const list = ['https://cp1.example:8443', 'https://cp2.example:8443/steward'];
  assert.deepEqual((await loadWith({ controlPlane: { url: list } })).controlPlane?.url, list);
  const eight = Array.from({ length: 8 }, (_, i) => `https://cp${i}.example`);
  assert.deepEqual((await loadWith({ controlPlane: { url: eight } })).controlPlane?.url, eight);
});

test('a bad list of control plane URLs is CONFIG_INVALID naming the file, the key and the rule', async () => {
  const cases: Array<[unknown, RegExp]> = [
    [[], /steward\.json: controlPlane\.url: a list of control plane URLs needs at least one URL/],
    [['https://cp1.example', 'not a url'], /steward\.json: controlPlane\.url\.1: Invalid URL/],
    [['https://cp1.example', 'https://cp1.example/'], /controlPlane\.url: the control plane URL https:\/\/cp1\.example\/ is listed twice/],
    [Array.from({ length: 9 }, (_, i) => `https://cp${i}.example`), /controlPlane\.url: a list of control plane URLs has at most 8 URLs, not 9/],
    [['https://cp1.example', 7], /controlPlane\.url: a URL, or a list of 1 to 8 URLs/],
    [{ primary: 'https://cp1.example' }, /controlPlane\.url: a URL, or a list of 1 to 8 URLs/],
  ];
  for (const [url, message] of cases) assert.match((await configError({ controlPlane: { url } })).message, message, JSON.stringify(url));
});

test('a process app without a runner key defaults to process', async () => {
  const c = await loadWith({ apps: { web: {} } });
  assert.equal(c.apps.web?.runner, 'process');
});

test('an unknown key is an error naming the key and the file', async () => {
  const err = await configError({ apps: { web: { runner: 'process', restrat: {} } } });
  assert.match(err.message, /steward\.json: apps\.web: .*restrat/);
});

test('a wrong type is an error naming the key path', async () => {
  const err = await configError({ apps: { web: { restart: { baseMs: 'soon' } } } });
  assert.match(err.message, /apps\.web\.restart\.baseMs/);
});

test('keepReleases below 2 is refused', async () => {
  const err = await configError({ apps: { web: { keepReleases: 1 } } });
  assert.match(err.message, /apps\.web\.keepReleases/);
});

test('memoryMax takes bytes as a number or a string with K, M, G or T, and is absent by default', async () => {
  const cases: Array<[unknown, number]> = [
    [1048576, 1024 * 1024],
    [536870912, 512 * 1024 * 1024],
    ['2048K', 2048 * 1024],
    ['512M', 512 * 1024 * 1024],
    ['1G', 1024 ** 3],
    ['2T', 2 * 1024 ** 4],
    ['3000000', 3_000_000],
  ];
  for (const [value, bytes] of cases) {
    const c = await loadWith({ apps: { web: { memoryMax: value } } });
    assert.equal(c.apps.web?.runner === 'process' ? c.apps.web.memoryMax : undefined, bytes, JSON.stringify(value));
  }
  const plain = await loadWith({ apps: { web: {} } });
  assert.equal(plain.apps.web?.runner === 'process' ? plain.apps.web.memoryMax : 'not a process app', undefined);
});

test('a bad memoryMax is CONFIG_INVALID naming the file, the app and the key', async () => {
  const cases: Array<[unknown, RegExp]> = [
    [0, /must be above 0/],
    [-5, /must be above 0/],
    ['0M', /must be above 0/],
    ['-1G', /is not a size/],
    [1.5, /a whole number of bytes/],
    ['lots', /"lots" is not a size/],
    ['512 M', /is not a size/],
    ['512MB', /is not a size/],
    ['512m', /is not a size/],
    ['', /is not a size/],
    [true, /a whole number of bytes/],
    [null, /a whole number of bytes/],
    [{ bytes: 5 }, /a whole number of bytes/],
    ['9999999999999999T', /too large/],
    [1048575, /below the smallest limit, 1M/],
    ['64K', /below the smallest limit, 1M/],
  ];
  for (const [value, why] of cases) {
    const err = await configError({ apps: { web: { memoryMax: value } } });
    assert.match(err.message, /steward\.json: apps\.web\.memoryMax: /, JSON.stringify(value));
    assert.match(err.message, why, JSON.stringify(value));
  }
  // A unit app's memory is its unit's business: the key is unknown there.
  assert.match((await configError({ apps: { agent: { runner: 'unit', unit: 'a.service', memoryMax: '1G' } } })).message, /apps\.agent: .*memoryMax/);
});

test('the app steward takes the runner self, with the helper unit and trial defaults filled in', async () => {
  const c = await loadWith({ apps: { steward: { runner: 'self' } } });
  assert.deepEqual(c.apps.steward, { runner: 'self', unit: 'steward-helper.service', keepReleases: 3, quarantine: { baseMs: 300_000, capMs: 86_400_000 }, stableMs: 5000, agentTimeoutMs: 120_000, handoverTimeoutMs: 120_000 });
});

test('the runner self is refused for any app but steward, and steward with any other runner', async () => {
  assert.match((await configError({ apps: { web: { runner: 'self' } } })).message, /apps\.web: the runner "self" is the app steward's/);
  assert.match((await configError({ apps: { steward: { runner: 'unit', unit: 'x.service' } } })).message, /apps\.steward: the runner "self"/);
  assert.match((await configError({ apps: { steward: {} } })).message, /apps\.steward: the runner "self"/);
});

test('a bad app name is refused', async () => {
  const err = await configError({ apps: { '../etc': {} } });
  assert.match(err.message, /app names/);
});

test('invalid JSON names the file', async () => {
  const err = await configError('{"apps": ');
  assert.match(err.message, /steward\.json: not valid JSON/);
});

test('a missing config is a clear error', async () => {
  const host = makeHost();
  try {
    await assert.rejects(loadHostConfig(host.paths.configFile + '.missing', { isRoot: false, accounts }), /does not exist/);
  } finally {
    host.cleanup();
  }
});

test('as root, process apps need a user and group that are not uid or gid 0', { skip: process.getuid?.() !== 0 ? 'needs root to own the config file (runs in CI as root)' : false }, async () => {
  assert.match((await configError({ apps: { web: {} } }, true)).message, /"user" and "group" are required/);
  assert.match((await configError({ apps: { web: { user: 'root', group: 'web' } } }, true)).message, /uid 0/);
  assert.match((await configError({ apps: { web: { user: 'web', group: 'root' } } }, true)).message, /gid 0/);
  assert.match((await configError({ apps: { web: { user: 'ghost', group: 'web' } } }, true)).message, /no user named ghost/);
  const ok = await loadWith({ apps: { web: { user: 'web', group: 'web' } } }, true);
  assert.equal(ok.apps.web?.runner, 'process');
});

test('as root, a config file writable by others is refused', { skip: process.getuid?.() !== 0 ? 'needs root (runs in CI as root)' : false }, async () => {
  const host = makeHost();
  try {
    writeFileSync(host.paths.configFile, JSON.stringify({ apps: {} }));
    chmodSync(host.paths.configFile, 0o666);
    await assert.rejects(loadHostConfig(host.paths.configFile, { isRoot: true, accounts }), /not writable by group or others/);
    chmodSync(host.paths.configFile, 0o644);
    chownSync(host.paths.configFile, 65534, 65534);
    await assert.rejects(loadHostConfig(host.paths.configFile, { isRoot: true, accounts }), /owned by root/);
  } finally {
    host.cleanup();
  }
});

test('apps.<app>.sockets takes TCP addresses and Unix paths, and is absent by default', async () => {
  const sockets = [
    { name: 'http', listen: '127.0.0.1:8080' },
    { name: 'v6', listen: '[::1]:8081' },
    { name: 'all', listen: '0.0.0.0:8443' },
    { name: 'admin.sock', listen: '/run/web/admin.sock' },
  ];
  const c = await loadWith({ apps: { web: { sockets } } });
  assert.deepEqual(c.apps.web?.runner === 'process' ? c.apps.web.sockets : null, sockets);
  const plain = await loadWith({ apps: { web: {} } });
  assert.equal(plain.apps.web?.runner === 'process' ? plain.apps.web.sockets : 'not a process app', undefined);
});

test('a bad socket declaration is CONFIG_INVALID naming the app and what is wrong', async () => {
  const cases: Array<[unknown, RegExp]> = [
    [[{ name: 'http', listen: 'localhost:8080' }], /neither HOST:PORT/],
    [[{ name: 'http', listen: '8080' }], /neither HOST:PORT/],
    [[{ name: 'http', listen: '127.0.0.1:0' }], /port 0 is outside 1-65535/],
    [[{ name: 'http', listen: '127.0.0.1:65536' }], /outside 1-65535/],
    [[{ name: 'http', listen: '::1:80' }], /neither HOST:PORT/],
    [[{ name: 'http', listen: '[127.0.0.1]:80' }], /bracketed IPv6/],
    [[{ name: 'http', listen: '999.0.0.1:80' }], /not an IPv4 address/],
    [[{ name: 'http', listen: 'run/web.sock' }], /neither HOST:PORT/],
    [[{ name: 'http', listen: '/run/../etc/web.sock' }], /not a normalized absolute path/],
    [[{ name: 'http', listen: `/${'x'.repeat(120)}` }], /longer than 107 bytes/],
    [[{ name: 'a:b', listen: '127.0.0.1:80' }], /socket name/],
    [[{ name: '', listen: '127.0.0.1:80' }], /socket name/],
    [[{ name: 'http' }], /listen/],
    [[{ name: 'http', listen: '127.0.0.1:80', mode: 1 }], /mode/],
    [[], /sockets/],
    [Array.from({ length: 17 }, (_, i) => ({ name: `s${i}`, listen: `127.0.0.1:${9000 + i}` })), /sockets/],
    [[{ name: 'http', listen: '127.0.0.1:80' }, { name: 'http', listen: '127.0.0.1:81' }], /the socket name http is used twice/],
  ];
  for (const [sockets, why] of cases) {
    const err = await configError({ apps: { web: { sockets } } });
    assert.match(err.message, /apps\.web\.sockets/, JSON.stringify(sockets));
    assert.match(err.message, why, JSON.stringify(sockets));
  }
});

test('one address declared twice, by one app or two, or under a wildcard of its family, is CONFIG_INVALID naming both', async () => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ web: { sockets: [{ name: 'a', listen: '127.0.0.1:80' }, { name: 'b', listen: '127.0.0.1:80' }] } }, /apps\.web\.sockets\[0\] \(127\.0\.0\.1:80\) and apps\.web\.sockets\[1\]/],
    [{ web: { sockets: [{ name: 'a', listen: '0.0.0.0:80' }] }, api: { sockets: [{ name: 'b', listen: '127.0.0.1:80' }] } }, /apps\.web\.sockets\[0\] \(0\.0\.0\.0:80\) and apps\.api\.sockets\[0\] \(127\.0\.0\.1:80\)/],
    [{ web: { sockets: [{ name: 'a', listen: '[::]:80' }] }, api: { sockets: [{ name: 'b', listen: '[::1]:80' }] } }, /\[::\]:80/],
    [{ web: { sockets: [{ name: 'a', listen: '/run/x.sock' }] }, api: { sockets: [{ name: 'b', listen: '/run/x.sock' }] } }, /\/run\/x\.sock/],
  ];
  for (const [apps, why] of cases) {
    const err = await configError({ apps });
    assert.match(err.message, /are the same address/, JSON.stringify(apps));
    assert.match(err.message, why, JSON.stringify(apps));
  }
  // Different ports, or one IPv4 and one IPv6 address, are different sockets.
  await loadWith({ apps: { web: { sockets: [{ name: 'a', listen: '0.0.0.0:80' }, { name: 'b', listen: '127.0.0.1:81' }, { name: 'c', listen: '[::]:80' }] } } });
});
