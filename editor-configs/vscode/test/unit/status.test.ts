import assert from 'node:assert/strict';
import { test } from 'node:test';

import { becameReady, modelStatus, pollDelayMs, statusView } from '../../src/status';

test('modelStatus reads .model of steerlsp/status', () => {
  const status = { state: 'running', model: { state: 'failed', model: 'default', error: 'out of memory', served: 2, accepted: 1 } };
  assert.deepEqual(modelStatus(status), { state: 'failed', model: 'default', error: 'out of memory', served: 2, accepted: 1 });
  assert.deepEqual(modelStatus({ model: { state: 'exploded' } }).state, undefined);
  assert.deepEqual(modelStatus(null), {});
  assert.deepEqual(modelStatus({ model: 'x' }), {});
});

test('each phase has its text', () => {
  assert.equal(statusView({ phase: 'starting', generating: 0 }).text, '$(loading~spin) steerlsp');
  assert.equal(statusView({ phase: 'loading', generating: 0 }).text, '$(loading~spin) steerlsp: loading');
  assert.equal(statusView({ phase: 'ready', generating: 0 }).text, '$(sparkle) steerlsp');
  assert.equal(statusView({ phase: 'ready', generating: 1 }).text, '$(sync~spin) steerlsp: generating');
  assert.equal(statusView({ phase: 'disabled', generating: 0 }).text, '$(circle-slash) steerlsp: no model');
  assert.equal(statusView({ phase: 'failed', generating: 0 }).text, '$(error) steerlsp: model failed');
});

test('errors are coloured and say why', () => {
  const failed = statusView({ phase: 'failed', generating: 0, error: 'out of memory' });
  assert.ok(failed.error);
  assert.match(failed.tooltip, /out of memory/);
  const ready = statusView({ phase: 'ready', generating: 0, served: 3, accepted: 1, source: 'PATH', model: 'default' });
  assert.ok(!ready.error);
  assert.match(ready.tooltip, /Gemma 3 270M/);
  assert.match(ready.tooltip, /served: 3, accepted: 1/);
  assert.match(ready.tooltip, /Server from: PATH/);
  assert.match(statusView({ phase: 'loading', generating: 0 }).tooltip, /Hover, diagnostics and the ChatLSP commands work already/);
});

test('polls often while loading, rarely once settled, never without a server', () => {
  assert.equal(pollDelayMs('loading'), 1000);
  assert.equal(pollDelayMs('starting'), 1000);
  assert.equal(pollDelayMs('ready'), 15000);
  assert.equal(pollDelayMs('stopped'), undefined);
  assert.equal(pollDelayMs('error'), undefined);
});

test('becoming ready is noticed once', () => {
  assert.ok(becameReady('loading', 'ready'));
  assert.ok(becameReady('starting', 'ready'));
  assert.ok(!becameReady('ready', 'ready'));
  assert.ok(!becameReady('loading', 'failed'));
});
