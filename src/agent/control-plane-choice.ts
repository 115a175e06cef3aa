// Which control-plane URLs the agent heartbeats to, and the one it starts from (docs/design.md §13),
// with the agent's control-plane.json that remembers the URL that last answered.
import type { HostConfig } from '../core/config-schema.js';
import { controlPlaneUrls } from '../core/control-plane-urls.js';
import type { ControlPlaneFile } from './agent-file-schemas.js';
import { readControlPlaneFile, writeControlPlaneFile, type AgentFiles } from './agent-files.js';
import type { Logf } from './convergence.js';

export interface ControlPlaneChoice {
  urls: string[];
  // Where the URLs come from, for the start-up line.
  from: 'host config' | 'control-plane.json' | 'enrollment.json';
  // The URL that answered last before this start, when control-plane.json names one.
  startAt?: string;
}

// The host config's controlPlane.url when set (the operator's word wins, as before lists), else
// the list this node enrolled with, else enrollment.json's one URL.
export function chooseControlPlaneUrls(config: HostConfig['controlPlane'], file: ControlPlaneFile | null, enrolledUrl: string): ControlPlaneChoice {
  const startAt = file?.answered?.url;
  const base = startAt === undefined ? {} : { startAt };
  if (config) return { urls: controlPlaneUrls(config.url), from: 'host config', ...base };
  if (file?.urls) return { urls: [...file.urls], from: 'control-plane.json', ...base };
  return { urls: [enrolledUrl], from: 'enrollment.json', ...base };
}

// control-plane.json as the agent starts: null when absent. One it cannot read (a newer steward's,
// a damaged one) is logged and left as it is: the agent still runs, on enrollment.json's URL or
// the host config's, and the file is never rewritten by this agent.
export async function readControlPlaneChoiceFile(files: AgentFiles, log: Logf): Promise<{ file: ControlPlaneFile | null; writable: boolean }> {
  try {
    return { file: await readControlPlaneFile(files), writable: true };
  } catch (err) {
    log('WARNING: %s is not used and not rewritten: %s', files.controlPlane, (err as Error).message);
    return { file: null, writable: false };
  }
}

// What the client calls when another URL answers: logs it and records it in control-plane.json
// (keeping the enrolled list), so that a restart starts from it. A failed write is logged only:
// the agent then starts from the first URL after a restart.
export function recordAnswered(files: AgentFiles, start: { file: ControlPlaneFile | null; writable: boolean }, now: () => number, log: Logf): (url: URL) => Promise<void> {
  const urls = start.file?.urls;
  return async (url) => {
    log('heartbeats go to %s (it answered)', url.href);
    if (!start.writable) return;
    try {
      await writeControlPlaneFile(files, { ...(urls ? { urls } : {}), answered: { url: url.href, since: now() } });
    } catch (err) {
      log('WARNING: %s: cannot record the control plane that answered (%s)', files.controlPlane, (err as Error).message);
    }
  };
}
