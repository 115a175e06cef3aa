import type { Command } from 'commander';
import { appArg } from '../arguments.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { printJson, printLines } from '../output.js';

// `agentctl start|stop|restart <app>`.
export function registerRunState(program: Command): void {
  const what = {
    start: 'start the app if it does not run (a fresh respawn budget, also out of `error`)',
    stop: 'stop the app and put a hold on it',
    restart: 'stop and start the app with a fresh respawn budget',
  } as const;
  for (const op of ['start', 'stop', 'restart'] as const) {
    program
      .command(`${op} <app>`)
      .description(what[op])
      .action(async (app: string, _o, cmd: Command) => {
        const fields = { app: appArg(app) };
        const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
        const r = await ctx.helper[op](fields);
        if (ctx.json) return printJson(r);
        if (op === 'stop') printLines([r.changed ? `${app} stopped (held: \`agentctl release-hold ${app}\` lets the control plane act again)` : `${app} was not running; held`]);
        else printLines([r.changed ? `${app} ${r.version} ${op}ed, pid ${r.pid}` : `${app} ${r.version} already runs, pid ${r.pid}`]);
      });
  }
}
