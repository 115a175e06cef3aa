#!/usr/bin/env node
import '../dist/src/control/main.js';
