import { StewardError } from '../../core/errors.js';
import { AGENT_APP } from '../../core/name-checks.js';
import type { HostPaths } from '../../core/paths.js';
import type { SelfAppConfig } from '../../core/config-schema.js';
import { SELF_APP } from '../../core/self-schemas.js';
import type { Clock } from '../../platform/clock.js';
import { readNodeId } from '../../host/node-id.js';

export interface SelfProbeInput {
  paths: HostPaths;
  clock: Clock;
  cfg: SelfAppConfig;
  // The version the launcher put on trial, and the one this code says it is.
  trialVersion: string;
  ownVersion: string;
  // Whether the agent is an app of this host.
  agentConfigured: boolean;
  // Resolves once the agent's own process confirmed a heartbeat answered while this helper ran
  // (expectAgentRoundTrip).
  agentConfirmed: Promise<void>;
}

// The candidate's self-probe (docs/design.md §14, step 3), run once its sockets are bound, every app is
// recovered and had its first pass: it is the version on trial, it stays up `stableMs`, and,
// when the host is enrolled, the agent confirms a heartbeat through it within `agentTimeoutMs`.
// Rejects with why it failed.
export async function probeSelf(p: SelfProbeInput): Promise<void> {
  if (p.ownVersion !== p.trialVersion) {
    throw new StewardError('REPLACEMENT_UNHEALTHY', `${SELF_APP} ${p.trialVersion}: the tree on trial runs code that says it is ${p.ownVersion}`);
  }
  const enrolled = p.agentConfigured && (await readNodeId(p.paths).catch(() => null)) !== null;
  const waits: Promise<void>[] = [p.clock.sleep(p.cfg.stableMs)];
  if (enrolled) {
    const timeout = new AbortController();
    waits.push(
      Promise.race([
        p.agentConfirmed.then(() => timeout.abort()),
        p.clock.sleep(p.cfg.agentTimeoutMs, timeout.signal).then(
          () => {
            throw new StewardError('REPLACEMENT_UNHEALTHY', `${SELF_APP} ${p.trialVersion}: the agent (${AGENT_APP}) did not confirm over helper.sock, from its own process, a heartbeat the control plane answered within ${p.cfg.agentTimeoutMs} ms`);
          },
          () => {},
        ),
      ]),
    );
  }
  await Promise.all(waits);
}
