import assert from 'node:assert/strict';
import { releaseArgs, type AppBehavior } from '../fixtures/app-releases.js';
import { agentctl, type TestHost } from './host.js';

// `agentctl update web <version>` of a test release (200 ms stable unless `behavior` says), which
// must end `active`; its JSON answer.
export async function updateActive(host: TestHost, version: string, port: number, behavior: AppBehavior): Promise<any> {
  const r = await agentctl(host, ['update', 'web', version, ...releaseArgs(host.scratch, 'web', version, port, { stableMs: 200, ...behavior }), '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(r.json.outcome, 'active', r.stdout);
  return r.json;
}
