#!/usr/bin/env node
// steward-control arrives with the control plane issue; until then it says so plainly.
process.stderr.write('steward-control: not built yet in this version of steward (see the README roadmap)\n');
process.exitCode = 1;
