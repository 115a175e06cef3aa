import createDebug from 'debug';

// A logger for one module: `steward:<area>:<module>`, to stderr, enabled by DEBUG.
export function logger(namespace: string): createDebug.Debugger {
  return createDebug(`steward:${namespace}`);
}

// Turns on steward's logs for a long-running program unless DEBUG already chooses.
export function enableDefaultLogs(pattern = 'steward:*'): void {
  if (!process.env.DEBUG) createDebug.enable(pattern);
}
