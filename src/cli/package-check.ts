// The Debian package's last configure step (docs/package.md): once the postinst restarted the
// helper, which steward runs. A package newer than the host's committed self-update goes
// through a trial (docs/self-update.md); one that did not commit leaves an older steward
// running than dpkg installed, and the configure step fails saying so, so that dpkg's state
// (half-configured) and apt's exit tell the operator what the helper's journal does.
// (`agentctl install --packaged --check-running`; the package's own files are install's.)
import { StewardError } from '../core/errors.js';
import { SELF_APP } from '../core/self-schemas.js';
import { compareVersions } from '../core/version.js';
import type { StatusResult } from '../protocol/answers.js';

export interface PackageCheckDeps {
  // The helper's status answer over admin.sock; throws while it does not answer.
  status(): Promise<StatusResult>;
  sleep(ms: number): Promise<void>;
  now(): number;
}

// Waits (at most `timeoutMs`) until the helper answers and has recovered, then returns the
// version it runs. A helper on trial recovers only once its trial committed (settle-trial.ts);
// one whose trial failed exits unready, and the next start runs what the launcher chose. Throws REPLACEMENT_UNHEALTHY when that is older than the
// package's `version` (its trial reverted), HELPER_UNREACHABLE when it never answered.
export async function checkPackagedHelper(version: string, deps: PackageCheckDeps, timeoutMs = 180_000): Promise<string> {
  const until = deps.now() + timeoutMs;
  let last = 'no answer yet';
  for (;;) {
    try {
      const st = await deps.status();
      const self = st.apps.find((a) => a.name === SELF_APP)?.self;
      if (!self) return 'unknown'; // a host config without the app steward: nothing to compare
      if (!st.recovering) {
        if (compareVersions(self.version, version) >= 0) return self.version;
        const why = self.packageReverted?.message ?? `steward ${self.version} runs, older than the package's ${version}`;
        throw new StewardError(
          'REPLACEMENT_UNHEALTHY',
          `${SELF_APP} ${version}: this package's helper did not commit its trial and was reverted: ${why}. dpkg leaves the package unconfigured until it runs.`,
        );
      }
      last = `steward-helper pid ${st.pid} runs ${self.version} (${self.decision ?? 'no launcher'}) and is still recovering`;
    } catch (err) {
      if (err instanceof StewardError && err.code === 'REPLACEMENT_UNHEALTHY') throw err;
      last = (err as Error).message;
    }
    if (deps.now() >= until) {
      throw new StewardError('HELPER_UNREACHABLE', `${SELF_APP} ${version}: which steward runs is unknown ${Math.round(timeoutMs / 1000)} s after the helper's restart (${last}); \`systemctl status steward-helper.service\``);
    }
    await deps.sleep(500);
  }
}
