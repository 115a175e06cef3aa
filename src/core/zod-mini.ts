// zod/mini, as every schema of steward imports it (docs/design.md §15): the daemons load zod/mini and never
// classic zod. zod/mini words every refusal "Invalid input" until a locale is set; English is
// set here, once, so that a refusal names the rule ("Too big: expected string to have <=64
// characters"), as classic zod words it. The locale is zod's own (a few kB).
import { z } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

z.config(en());

export { z };
