// How the dashboard writes times and states: "3 min ago" with the exact time on hover, state as
// a word and a colour (the class `st-<state>`), versions in monospace.
import { h, type Child } from './dom.js';

// "12 s", "3 min", "2 h", "4 d": how long `ms` is, roughly.
export function duration(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

export function exactTime(at: number): string {
  return new Date(at).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

// A time as "3 min ago" (or "in 3 min") seen from the server's `now`, the exact time on hover.
export function when(at: number | null, now: number): Child {
  if (at === null) return h('span', { class: 'muted' }, '-');
  const d = now - at;
  return h('time', { title: exactTime(at) }, d >= 0 ? `${duration(d)} ago` : `in ${duration(d)}`);
}

// A state as a word in its colour.
export function state(word: string | null, extra?: string): Child {
  if (word === null) return h('span', { class: 'muted' }, '-');
  return h('span', { class: `st st-${word.replace(/[^a-z-]/g, '')}`, ...(extra ? { title: extra } : {}) }, word);
}

// A version (or any identifier) in monospace.
export function mono(text: string | null | undefined, title?: string): Child {
  if (text === null || text === undefined) return h('span', { class: 'muted' }, '-');
  return h('code', title ? { title } : {}, text);
}

export function flag(text: string, kind: 'bad' | 'warn', title?: string): HTMLElement {
  return h('span', { class: `flag flag-${kind}`, ...(title ? { title } : {}) }, text);
}
