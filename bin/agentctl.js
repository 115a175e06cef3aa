#!/usr/bin/env node
import { runCli } from '../dist/bundle/agentctl/agentctl.js';

process.exitCode = await runCli(process.argv.slice(2));
