#!/usr/bin/env node
// steward-agent arrives with the heartbeat issue; until then it says so plainly.
process.stderr.write('steward-agent: not built yet in this version of steward (see the README roadmap)\n');
process.exitCode = 1;
