#!/usr/bin/env node
import { main } from '../dist/bundle/steward-helper/steward-helper.js';

process.exitCode = await main(process.argv.slice(2));
