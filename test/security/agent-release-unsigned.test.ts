import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hostConfigSchema } from '../../src/core/config-schema.js';
import { StewardError } from '../../src/core/errors.js';
import { AGENT_APP } from '../../src/core/names.js';
import { versionDir } from '../../src/core/paths.js';
import { realStageIO } from '../../src/helper/stage/real-stage-io.js';
import { stageRelease } from '../../src/helper/stage/stage-release.js';
import { systemClock } from '../../src/platform/clock.js';
import { useHost } from '../helpers/host-fixture.js';
import { sri } from '../helpers/host.js';

// Attack: an admin-socket caller (or a script with root's habits) installs an unsigned agent with
// --allow-unsigned. The agent holds the node key and speaks for the host, so the helper refuses
// it before reading a byte, and nothing is staged.

test('an unsigned steward-agent release is refused on admin.sock even with --allow-unsigned', async (t) => {
  const host = useHost(t, { apps: { [AGENT_APP]: { runner: 'unit', unit: 'steward-agent.service' } } });
  const tgz = path.join(host.scratch, 'agent.tgz');
  writeFileSync(tgz, 'not even read');
  const config = hostConfigSchema.parse({ apps: { [AGENT_APP]: { runner: 'unit', unit: 'steward-agent.service' } } });
  await assert.rejects(
    stageRelease(
      { paths: host.paths, config, clock: systemClock, io: realStageIO },
      { kind: 'admin', app: AGENT_APP, version: '1.0.0', path: tgz, integrity: sri(Buffer.from('not even read')), allowUnsigned: true },
    ),
    (err: unknown) => err instanceof StewardError && err.code === 'SIGNATURE_INVALID' && /only ever installed from a release signed/.test(err.message),
  );
  assert.equal(existsSync(versionDir(host.paths, AGENT_APP, '1.0.0')), false);
});

