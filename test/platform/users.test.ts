import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { lookupGroup, lookupUser } from '../../src/platform/users.js';

test('groups and users are read from group(5) and passwd(5) files; absent names are null', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-users-'));
  try {
    const group = path.join(dir, 'group');
    const passwd = path.join(dir, 'passwd');
    writeFileSync(group, 'root:x:0:\nsteward:x:990:alice,bob\nbroken:x:notanumber:\n');
    writeFileSync(passwd, 'root:x:0:0:root:/root:/bin/bash\nsteward:x:990:990::/var/lib/steward-agent:/usr/sbin/nologin\n');
    assert.deepEqual(await lookupGroup('steward', group), { name: 'steward', gid: 990, members: ['alice', 'bob'] });
    assert.equal(await lookupGroup('broken', group), null);
    assert.equal(await lookupGroup('stew', group), null);
    assert.deepEqual(await lookupUser('steward', passwd), { name: 'steward', uid: 990, gid: 990, home: '/var/lib/steward-agent' });
    assert.equal(await lookupUser('nobody-here', passwd), null);
    assert.equal(await lookupGroup('x', path.join(dir, 'missing')), null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
