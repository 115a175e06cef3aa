// The helper's node_exporter textfile, written by hand (no prom-client in the helper): what
// `promtool check metrics` accepts, with the values a node_exporter user reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderTextfile, type TextfileApp } from '../../../src/helper/metrics/render-textfile.js';
import { assertPromtoolPasses, samplesOf, valueOf } from '../../helpers/prom-text.js';

const app = (over: Partial<TextfileApp> & { name: string }): TextfileApp => ({ runner: 'process', current: null, supervisorState: null, held: false, blocked: false, lastUpdate: null, restarts: 0, ...over });

test('a host with apps in every state renders text that promtool accepts, with their values', (t) => {
  const text = renderTextfile({
    apps: [
      app({ name: 'web', current: '1.4.2', supervisorState: 'running', held: true, lastUpdate: { outcome: 'active', updatedAt: 1_800_000_000_123 }, restarts: 3 }),
      app({ name: 'api', current: '2.0.0-rc.1', supervisorState: 'error', blocked: true, lastUpdate: { outcome: 'rolled-back', updatedAt: 1_800_000_001_000 } }),
      app({ name: 'fresh' }),
      app({ name: 'steward-agent', runner: 'unit', current: '0.1.0', lastUpdate: { outcome: 'activating', updatedAt: 1_800_000_002_000 } }),
    ],
    receipts: { active: 2, 'rolled-back': 1 },
    writeErrors: 4,
  });
  assertPromtoolPasses(t, text);
  assert.equal(valueOf(text, 'steward_app_info', { app: 'web', version: '1.4.2' }), 1);
  assert.equal(valueOf(text, 'steward_app_info', { app: 'fresh', version: 'none' }), 1);
  assert.equal(valueOf(text, 'steward_app_up', { app: 'web' }), 1);
  assert.equal(valueOf(text, 'steward_app_up', { app: 'api' }), 0);
  assert.equal(valueOf(text, 'steward_app_up', { app: 'steward-agent' }), undefined, 'a unit app is systemd’s to watch');
  assert.equal(valueOf(text, 'steward_app_supervisor_state', { app: 'api', state: 'error' }), 1);
  assert.equal(valueOf(text, 'steward_app_supervisor_state', { app: 'api', state: 'running' }), 0);
  assert.equal(valueOf(text, 'steward_app_restarts_total', { app: 'web' }), 3);
  assert.deepEqual([valueOf(text, 'steward_app_held', { app: 'web' }), valueOf(text, 'steward_app_blocked', { app: 'api' })], [1, 1]);
  assert.equal(valueOf(text, 'steward_update_last_outcome', { app: 'api', outcome: 'rolled-back' }), 1);
  assert.equal(valueOf(text, 'steward_update_last_outcome', { app: 'api', outcome: 'active' }), 0);
  assert.equal(valueOf(text, 'steward_update_last_outcome', { app: 'fresh', outcome: 'active' }), undefined);
  assert.equal(valueOf(text, 'steward_update_last_timestamp_seconds', { app: 'web' }), 1_800_000_000.123);
  assert.deepEqual(['active', 'rolled-back', 'failed', 'refused'].map((o) => valueOf(text, 'steward_receipts_total', { outcome: o })), [2, 1, 0, 0]);
  assert.equal(valueOf(text, 'steward_textfile_write_errors_total'), 4);
  // Apps in name order, so that the same facts make the same bytes.
  assert.deepEqual(samplesOf(text).filter((s) => s.name === 'steward_app_info').map((s) => s.labels.app), ['api', 'fresh', 'steward-agent', 'web']);
});

test('a host with no app renders text that promtool accepts', (t) => {
  const text = renderTextfile({ apps: [], receipts: {}, writeErrors: 0 });
  assertPromtoolPasses(t, text);
  assert.equal(valueOf(text, 'steward_receipts_total', { outcome: 'active' }), 0);
  assert.equal(valueOf(text, 'steward_textfile_write_errors_total'), 0);
});

test('an open watch window and the last exit are in the textfile (docs/design.md §17)', (t) => {
  const text = renderTextfile({
    apps: [
      app({ name: 'web', current: '2.0.0', supervisorState: 'running', lastExit: { code: 3, signal: null }, watch: { version: '2.0.0', until: 1_800_000_300_000, restarts: 1, maxRestarts: 2 } }),
      app({ name: 'api', current: '1.0.0', supervisorState: 'running', lastExit: { code: null, signal: 'SIGKILL' } }),
      app({ name: 'old', current: '1.0.0', supervisorState: 'running', lastExit: { code: null, signal: null } }),
      app({ name: 'odd', current: '1.0.0', supervisorState: 'running', lastExit: { code: null, signal: 'SIG"}\nX' } }),
      app({ name: 'fresh' }),
      app({ name: 'oom', current: '1.0.0', supervisorState: 'running', lastExit: { code: null, signal: 'SIGKILL', reason: 'OOM' }, restartsSinceActivation: 4 }),
      app({ name: 'dog', current: '1.0.0', supervisorState: 'running', lastExit: { code: null, signal: 'SIGABRT', reason: 'WATCHDOG' } }),
    ],
    receipts: {},
    writeErrors: 0,
  });
  assertPromtoolPasses(t, text);
  assert.equal(valueOf(text, 'steward_app_last_exit_info', { app: 'oom', reason: 'OOM', code: 'SIGKILL' }), 1, 'an OOM kill is not an ordinary SIGKILL');
  assert.equal(valueOf(text, 'steward_app_last_exit_info', { app: 'dog', reason: 'WATCHDOG', code: 'SIGABRT' }), 1);
  assert.deepEqual(['oom', 'dog'].map((a) => valueOf(text, 'steward_app_restarts_since_activation', { app: a })), [4, 0]);
  assert.deepEqual(['web', 'api', 'fresh'].map((a) => valueOf(text, 'steward_app_watch_window_open', { app: a })), [1, 0, 0]);
  assert.equal(valueOf(text, 'steward_app_watch_window_end_timestamp_seconds', { app: 'web', version: '2.0.0' }), 1_800_000_300);
  assert.equal(valueOf(text, 'steward_app_watch_window_exits', { app: 'web', version: '2.0.0' }), 1);
  assert.equal(valueOf(text, 'steward_app_watch_window_exits_allowed', { app: 'web', version: '2.0.0' }), 2);
  assert.equal(valueOf(text, 'steward_app_watch_window_exits', { app: 'api', version: '1.0.0' }), undefined, 'no window, no count');
  assert.equal(valueOf(text, 'steward_app_last_exit_info', { app: 'web', reason: 'EXIT', code: '3' }), 1);
  assert.equal(valueOf(text, 'steward_app_last_exit_info', { app: 'api', reason: 'SIGNAL', code: 'SIGKILL' }), 1);
  assert.equal(valueOf(text, 'steward_app_last_exit_info', { app: 'old', reason: 'UNKNOWN', code: '' }), 1);
  assert.equal(valueOf(text, 'steward_app_last_exit_info', { app: 'odd', reason: 'SIGNAL', code: 'SIGX' }), 1, 'only letters and digits of a signal name');
  assert.equal(samplesOf(text).filter((s) => s.name === 'steward_app_last_exit_info' && s.labels.app === 'fresh').length, 0);
});
