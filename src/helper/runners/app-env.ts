import os from 'node:os';
import { APP_PATH } from '../../platform/systemd.js';
import { appFdEnv, firstAppFd } from './app-fds.js';
import type { StartSpec } from './runner.js';

// The environment of a `process` app, built from nothing (docs/design.md §5): nothing of the
// helper's own environment leaks into the app; start.env comes after steward's own variables,
// except STEWARD_INSTANCE, which a release cannot set: it is the proof of the app's processes,
// and the fd numbers of STEWARD_READY_FD and STEWARD_WATCHDOG_FD, which are the runner's.
export function buildAppEnv(spec: StartSpec): Record<string, string> {
  const self = spec.runAs ? null : os.userInfo();
  const user = spec.runAs ? spec.runAs.name : (self?.username ?? '');
  const home = spec.runAs ? spec.runAs.home : (self?.homedir ?? '/');
  return {
    PATH: APP_PATH,
    HOME: home,
    USER: user,
    LOGNAME: user,
    LANG: 'C.UTF-8',
    STEWARD_APP: spec.app,
    STEWARD_VERSION: spec.version,
    STATE_DIRECTORY: spec.stateDir,
    ...spec.env,
    STEWARD_INSTANCE: spec.instance,
    ...listenEnv(spec),
    ...appFdEnv(spec.fds, firstAppFd(spec.listen?.fds.length ?? 0)),
  };
}

// The sockets of an app that has them, as systemd tells them (sd_listen_fds(3)): their count and
// names. LISTEN_PID, the app's own pid, is set by the process runner's exec wrapper, the only
// place that knows it; a release cannot set any of the three.
function listenEnv(spec: StartSpec): Record<string, string> {
  if (!spec.listen) return {};
  return { LISTEN_FDS: String(spec.listen.fds.length), LISTEN_FDNAMES: spec.listen.names.join(':') };
}
