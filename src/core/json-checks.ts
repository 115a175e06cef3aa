// The small tests the zod-free checkers share (issue 8, row 5: config-check, receipt-check,
// the agent's answer and file checks). Each mirrors one zod rule as this zod (4.x) applies it.

export type Obj = Record<string, unknown>;

// z.object's input: an object that is not null and not an array.
export const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
// z.number().int().min(min).max(max): .int() takes safe integers only.
export const isInt = (v: unknown, min: number, max: number): v is number => Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;
// epochMsSchema of names.ts: a safe integer >= 0.
export const isEpoch = (v: unknown): v is number => isInt(v, 0, Number.MAX_SAFE_INTEGER);
// z.string().min(min).max(max): lengths in UTF-16 code units.
export const isString = (v: unknown, min: number, max: number): v is string => typeof v === 'string' && v.length >= min && v.length <= max;
// z.strictObject: no own key but `allowed`.
export const onlyKeys = (o: Obj, allowed: readonly string[]): boolean => Object.keys(o).every((k) => allowed.includes(k));

// z.record's input (zod's util.isPlainObject): an object, not an array, whose constructor (when
// it is a function) has a prototype with its own isPrototypeOf.
export function isPlainObject(v: unknown): v is Obj {
  if (!isObject(v)) return false;
  const ctor = v.constructor;
  if (ctor === undefined || typeof ctor !== 'function') return true;
  const prot: unknown = ctor.prototype;
  return isObject(prot) && Object.prototype.hasOwnProperty.call(prot, 'isPrototypeOf');
}
