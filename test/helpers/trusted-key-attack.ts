import assert from 'node:assert/strict';
import path from 'node:path';
import { trustedKeysFor } from '../../src/core/paths.js';
import { releaseTgz } from '../fixtures/releases.js';
import { makeReleaseKey, manifestFor, type ReleaseKey } from './host.js';
import { assertStageRefused, hostWithCurrent, stageBytes, type StagedHost } from './stage-harness.js';

// One flaw of a release key file or of a folder on its path (issue 15 item 3): root must not
// trust a key that someone other than root could have written or could swap.
export interface KeyFlaw {
  // Makes the flaw on a host where trusted-keys/web/ holds a good key and `keyFile`, the
  // attacker's key, both written by the test as 0644 files.
  apply(s: StagedHost, keyFile: string): void;
  // What the refusal of the attacker's manifest must say: the file or folder, and the flaw.
  says(s: StagedHost, keyFile: string): string;
  // The flaw is in a folder: then the good key beside it is not trusted either.
  inFolder?: boolean;
}

function plantKeys(s: StagedHost): { good: ReleaseKey; bad: ReleaseKey; badFile: string } {
  const good = makeReleaseKey(s.host, ['web']);
  const bad = makeReleaseKey(s.host, ['web']);
  return { good, bad, badFile: path.join(trustedKeysFor(s.host.paths, 'web'), `${bad.keyId}.pub`) };
}

// A manifest signed by the attacker's key is refused (SIGNATURE_INVALID, nothing changed) with a
// message naming the flaw; a manifest signed by the good key beside it stages, unless the flaw
// is in a folder, where it is refused too.
export async function assertKeyFlawRefused(flaw: KeyFlaw): Promise<void> {
  const tgz = releaseTgz('web', '2.0.0');
  let says = '';
  const err = await assertStageRefused(tgz, 'SIGNATURE_INVALID', (s) => {
    const { bad, badFile } = plantKeys(s);
    flaw.apply(s, badFile);
    says = flaw.says(s, badFile);
    return { manifest: bad.sign(manifestFor('web', '2.0.0', tgz)), allowUnsigned: false, integrity: undefined };
  });
  assert.ok(err.message.includes(says), `the refusal says "${says}": ${err.message}`);
  assert.match(err.message, /must be owned by root/, 'the message states the rule');

  const s = await hostWithCurrent();
  try {
    const { good, badFile } = plantKeys(s);
    flaw.apply(s, badFile);
    const res = await stageBytes(s, tgz, { manifest: good.sign(manifestFor('web', '2.0.0', tgz)), allowUnsigned: false, integrity: undefined });
    if (flaw.inFolder) {
      assert.equal(res?.code, 'SIGNATURE_INVALID', 'a key in a folder that breaks the rule is not trusted');
      assert.ok(res.message.includes(flaw.says(s, badFile)), res.message);
    } else {
      assert.equal(res, null, `the good key beside the bad one still signs: ${res?.message}`);
    }
  } finally {
    s.host.cleanup();
  }
}
