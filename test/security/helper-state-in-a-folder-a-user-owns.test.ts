import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync } from 'node:fs';
import { StewardError } from '../../src/core/errors.js';
import { ensureLayout } from '../../src/helper/layout.js';
import { loadOrCreateHelperKey } from '../../src/host/helper-key.js';
import { IS_ROOT, makeHost } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';

// The attack: /var/lib/steward (root-owned 0700 journal/, state/ with node.json, keys/ with
// helper.key inside) owned by another user. That user may rename keys/ or state/ away and put
// their own in place: a helper key they know signs this host's receipts. The helper refuses the
// layout at start, and the key on its own.

test('a var/lib/steward owned by another user: the layout and the helper key are refused, naming it', async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'giving the folder to another uid needs root');
  const host = makeHost();
  try {
    await ensureLayout(host.paths);
    chownSync(host.paths.varLib, 65534, 65534);
    const says = `${host.paths.varLib} is owned by uid 65534, not root`;
    await assert.rejects(ensureLayout(host.paths), (err: unknown) => {
      assert.ok(err instanceof StewardError);
      assert.equal(err.code, 'ROOT_UNSAFE');
      assert.ok(err.message.includes(says), err.message);
      return true;
    });
    await assert.rejects(loadOrCreateHelperKey(host.paths), (err: unknown) => {
      assert.ok(err instanceof StewardError);
      assert.equal(err.code, 'STATE_INVALID');
      assert.ok(err.message.includes(says), err.message);
      return true;
    });
  } finally {
    host.cleanup();
  }
});
