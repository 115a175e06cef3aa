#!/usr/bin/env node
import '../dist/src/helper/main.js';
