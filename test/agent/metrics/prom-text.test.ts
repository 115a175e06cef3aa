import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseMetricSelector, isMetricSelector } from '../../../src/core/metric-selector.js';
import { sumMatching } from '../../../src/agent/metrics/prom-text.js';

const sel = (...s: string[]) => s.map(parseMetricSelector);

const BODY = `# HELP http_requests_total Requests.
# TYPE http_requests_total counter
http_requests_total{method="GET",code="200"} 1027 1395066363000
http_requests_total{method="POST",code="200"} 3
http_requests_total{method="GET",code="500"} 2.5e1
http_requests_total{method="GET", code="404",} 4

other_total 99
`;

test('matching series are summed: by name, =, !=, =~ and !~, with timestamps, spaces and a trailing comma', () => {
  const r = sumMatching(BODY, sel('http_requests_total', 'http_requests_total{code="200"}', 'http_requests_total{code!="200"}', 'http_requests_total{code=~"4..|5.."}', 'http_requests_total{code!~"2..", method="GET"}'));
  assert.deepEqual(r.sums, [1059, 1030, 29, 29, 29]);
});

test('a label the series lacks reads as "", as in PromQL', () => {
  assert.deepEqual(sumMatching('a_total 1\na_total{x="1"} 2\n', sel('a_total{x=""}', 'a_total{x!=""}')).sums, [1, 2]);
});

test('counters absent: a metric named nowhere is null; one with metadata and no matching series is 0', () => {
  const r = sumMatching(BODY, sel('missing_total', 'http_requests_total{code="503"}'));
  assert.deepEqual(r.sums, [null, 0]);
  assert.deepEqual(sumMatching('# TYPE errs_total counter\n', sel('errs_total')).sums, [0]);
  assert.deepEqual(sumMatching('', sel('errs_total')).sums, [null]);
});

test('selectors parse strictly', () => {
  for (const ok of ['a', 'a_total{}', 'a:b{x="1"}', 'a{x="1",y!="2",z=~"3",w!~"4"}', 'a{x="\\"q\\""}']) assert.ok(isMetricSelector(ok), ok);
  for (const bad of ['', '1a', 'a{', 'a{x=1}', 'a{x="1"', 'a{x~"1"}', 'a{x="1"}b', 'a b', `a{x="${'v'.repeat(300)}"}`, `a{${Array.from({ length: 9 }, (_, i) => `l${i}="1"`).join(',')}}`]) {
    assert.equal(isMetricSelector(bad), false, bad);
  }
});
