#!/usr/bin/env node
import { runControlCli } from '../dist/bundle/steward-control/steward-control.js';

process.exitCode = await runControlCli(process.argv.slice(2));
