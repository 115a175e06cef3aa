// steward's app contract (docs/app-contract.md) in a few lines of Node, no dependencies: copy
// this file into your release. Both functions do nothing when steward did not ask for them.
import fs from 'node:fs';

// start.ready "fd": call once the app serves (listening, caches warm). One newline on
// STEWARD_READY_FD; steward probes the app's health only after it.
export function signalReady() {
  const fd = Number(process.env.STEWARD_READY_FD);
  if (!Number.isInteger(fd)) return;
  fs.writeSync(fd, '\n');
  fs.closeSync(fd);
}

// start.watchdogMs: a newline on STEWARD_WATCHDOG_FD every half of STEWARD_WATCHDOG_MS, from a
// timer of the event loop, so that a blocked loop stops it and steward restarts the app.
// Returns a function that stops it (call it only when the app is about to exit).
export function feedWatchdog() {
  const fd = Number(process.env.STEWARD_WATCHDOG_FD);
  const ms = Number(process.env.STEWARD_WATCHDOG_MS);
  if (!Number.isInteger(fd) || !(ms > 0)) return () => {};
  const timer = setInterval(() => {
    try {
      fs.writeSync(fd, '\n');
    } catch {
      // EAGAIN and the like: the next tick tries again (steward judges only the silence)
    }
  }, Math.max(1, Math.floor(ms / 2)));
  timer.unref(); // never what keeps the app alive
  return () => clearInterval(timer);
}
