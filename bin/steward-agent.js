#!/usr/bin/env node
import '../dist/src/agent/main.js';
