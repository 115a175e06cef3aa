import { existsSync } from 'node:fs';
import { execa } from 'execa';
import { StewardError } from '../core/errors.js';

// The systemd tools install and uninstall call (never reimplemented). Each returns its output;
// a non-zero exit throws SYSTEM_COMMAND_FAILED with what the tool said, unless `allowFail`.
export interface SystemTools {
  run(cmd: string, args: string[], opts?: { allowFail?: boolean }): Promise<{ code: number; stdout: string; stderr: string }>;
}

const ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' };

// The real tools, through execa, with a fixed PATH and no shell.
export const realSystemTools: SystemTools = {
  async run(cmd, args, opts = {}) {
    const r = await execa(cmd, args, { reject: false, extendEnv: false, env: ENV, stdin: 'ignore', timeout: 120_000 });
    const out = { code: typeof r.exitCode === 'number' ? r.exitCode : 1, stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? '') };
    if (out.code !== 0 && !opts.allowFail) {
      const said = (out.stderr || out.stdout).trim().split('\n').slice(-5).join(' / ');
      throw new StewardError('SYSTEM_COMMAND_FAILED', `${cmd} ${args.join(' ')} exited ${r.exitCode ?? r.signal}: ${said || '(no output)'}`);
    }
    return out;
  },
};

// Whether PID 1 is systemd (sd_booted(3): /run/systemd/system exists).
export function systemdBooted(): boolean {
  return existsSync('/run/systemd/system');
}

// Refuses anyone but root before anything is read or changed.
export function requireRoot(command: string): void {
  if (process.getuid?.() !== 0) throw new StewardError('NEEDS_ROOT', `agentctl ${command} changes the host (units, users, /opt/steward, /etc/steward) and must run as root`);
}

// Refuses a host without systemd as PID 1 before anything is changed.
export function requireSystemd(command: string): void {
  if (!systemdBooted()) throw new StewardError('SYSTEMD_UNAVAILABLE', `agentctl ${command}: /run/systemd/system does not exist, so PID 1 is not systemd`);
}
