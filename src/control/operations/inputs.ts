// The input schemas that the operations share: their flags and words as the CLI takes them.
import * as z from '../../core/zod-mini.js';

// A flag's value as the CLI takes it: text (a number is taken as its text, for scripts).
export const flag = z.optional(z.pipe(z.union([z.string().check(z.maxLength(4096)), z.number()]), z.transform(String)));
// A repeatable flag.
export const flags = z.optional(z.array(z.string().check(z.maxLength(4096))).check(z.maxLength(1000)));
export const toggle = z.optional(z.boolean());
export const word = z.string().check(z.minLength(1), z.maxLength(256));
