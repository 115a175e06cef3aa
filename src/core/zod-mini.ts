// zod/mini, as every schema of steward imports it (docs/design.md §15): the daemons load zod/mini and never
// classic zod. zod/mini words every refusal "Invalid input" until a locale is set; English is
// set here, once, so that a refusal names the rule ("Too big: expected string to have <=64
// characters"), as classic zod words it. The locale is zod's own (a few kB).
//
// Imported as a namespace, `import * as z from './zod-mini.js'`, never as zod's own `z`: esbuild
// bundles only the members a namespace import reads by name (z.string, z.strictObject), whereas
// zod's `z` is a namespace object used as a value, which keeps every member of zod/mini and of
// zod/v4/core (its JSON Schema converters, its code generator) in each program's bundle.
import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());

export * from 'zod/mini';
