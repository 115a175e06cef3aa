#!/usr/bin/env node
import { runControlCli } from '../dist/src/control/cli/main.js';

process.exitCode = await runControlCli(process.argv.slice(2));
