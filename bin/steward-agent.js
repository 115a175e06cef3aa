#!/usr/bin/env node
import { main } from '../dist/bundle/steward-agent/steward-agent.js';

process.exitCode = await main(process.argv.slice(2));
