// zod/mini, as every schema of steward imports it (docs/design.md §15): the daemons load zod/mini and never
// classic zod. zod/mini words every refusal "Invalid input" until a locale is set; English is
// set here, once, so that a refusal names the rule ("Too big: expected string to have <=64
// characters"), as classic zod words it. The locale is zod's own (a few kB).
//
// Import it as a namespace, `import * as z from '.../zod-mini.js'`, never as `{ z }`: each `z.x`
// is then a named import, and the bundler keeps only the functions a program calls. `{ z }` is
// zod/mini's namespace object, a value holding every export (the JSON Schema generator, `z.compile`'s
// schema compiler, every string format), so all of them were bundled and run at start by every program
// that loads a schema: `agentctl status` held 260 KB of zod, now 50 KB (bench/README.md, status-cli).
import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());

export * from 'zod/mini';
