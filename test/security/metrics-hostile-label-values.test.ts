// Counters with hostile label values (docs/design.md §19): escaped quotes and newlines read as the
// values they are, a raw newline cannot smuggle a sample in, a megabyte-long value is ignored,
// a regex matcher is anchored and never runs over a huge value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseMetricSelector } from '../../src/core/metric-selector.js';
import { PromTextError, sumMatching } from '../../src/agent/metrics/prom-text.js';

const sel = (...s: string[]) => s.map(parseMetricSelector);

test('an escaped quote inside a label value neither ends the value nor opens a new label', () => {
  const body = 'req_total{code="5\\"} req_total{code=\\"500",path="/x"} 3\nreq_total{code="200"} 4\n';
  const r = sumMatching(body, sel('req_total', 'req_total{code="500"}', 'req_total{code="5\\"} req_total{code=\\"500"}'));
  assert.deepEqual(r.sums, [7, 0, 3]);
});

test('an escaped newline is a value; a raw newline inside a value fails the whole body (no smuggled sample)', () => {
  assert.deepEqual(sumMatching('req_total{path="a\\nreq_total 1e9"} 1\n', sel('req_total')).sums, [1]);
  assert.throws(() => sumMatching('req_total{path="a\nreq_total 1000000000\n"} 1\n', sel('req_total')), PromTextError);
});

test('a label value of a megabyte is ignored (its series is not summed), and the scrape goes on', () => {
  const huge = 'x'.repeat(1024 * 1024);
  const r = sumMatching(`req_total{code="500",path="${huge}"} 100\nreq_total{code="500"} 1\n`, sel('req_total{code=~"5.."}'));
  assert.deepEqual(r.sums, [1]);
  assert.equal(r.ignored, 1);
});

test('a regex matcher is anchored: 5.. matches 503, not 1503 nor 5030', () => {
  const r = sumMatching('req_total{code="503"} 1\nreq_total{code="1503"} 10\nreq_total{code="5030"} 100\n', sel('req_total{code=~"5.."}', 'req_total{code!~"5.."}'));
  assert.deepEqual(r.sums, [1, 110]);
});

test('a catastrophic regex, a backreference or a lookaround is refused where the selector is read', () => {
  for (const bad of ['a{x=~"(a+)+$"}', 'a{x=~"(.*)\\\\1"}', 'a{x=~"(?=a)a"}', 'a{x=~"["}']) assert.throws(() => parseMetricSelector(bad), Error, bad);
});

test('NaN, negative and infinite values, duplicate labels and bad escapes are not summed', () => {
  assert.deepEqual(sumMatching('req_total NaN\nreq_total -5\nreq_total +Inf\nreq_total 2\n', sel('req_total')).sums, [2]);
  assert.throws(() => sumMatching('req_total{a="1",a="2"} 1\n', sel('req_total')), PromTextError);
  assert.throws(() => sumMatching('req_total{a="\\x"} 1\n', sel('req_total')), PromTextError);
  assert.throws(() => sumMatching('req_total{a="1"} one\n', sel('req_total')), PromTextError);
});
