import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  CLIENT_KEYS,
  configurationParams,
  explicitValue,
  initializationOptions,
  Inspected,
  needsRestart,
  nest,
  RESTRICTED_KEYS,
  serverKeys,
  snapshot,
} from '../../src/settings';
import { packageJson } from '../packageJson';

const pkg = packageJson();
const properties: Record<string, { default?: unknown }> = Object.assign(
  {},
  ...pkg.contributes.configuration.map((group: { properties: object }) => group.properties),
);

/** A fake `inspect`: package.json's defaults, and `user`/`workspace` values on top. */
function inspector(user: Record<string, unknown> = {}, workspace: Record<string, unknown> = {}) {
  return (key: string): Inspected | undefined => {
    const property = properties[`steerlsp.${key}`];
    if (!property) {
      return undefined;
    }
    return { defaultValue: property.default, globalValue: user[key], workspaceValue: workspace[key] };
  };
}

test('server keys are every contributed setting but the client-only ones', () => {
  const keys = serverKeys(pkg);
  assert.ok(keys.includes('completion.maxNewTokens'));
  assert.ok(keys.includes('python.trustWorkspace'));
  assert.ok(keys.includes('chatlsp.promptContext'));
  for (const key of CLIENT_KEYS) {
    assert.ok(!keys.includes(key), key);
    assert.ok(`steerlsp.${key}` in properties, `client key ${key} is contributed`);
  }
  assert.equal(keys.length + CLIENT_KEYS.size, Object.keys(properties).length);
});

test('restricted keys match package.json restrictedConfigurations', () => {
  const restricted = pkg.capabilities.untrustedWorkspaces.restrictedConfigurations as string[];
  assert.deepEqual(new Set(restricted), new Set([...RESTRICTED_KEYS].map((key) => `steerlsp.${key}`)));
});

test('nest turns dotted keys into objects', () => {
  assert.deepEqual(nest({ 'completion.maxNewTokens': 32, 'completion.enabled': true, 'model.name': 'x' }), {
    completion: { maxNewTokens: 32, enabled: true },
    model: { name: 'x' },
  });
});

test('only the values the user set are sent; defaults stay with the server', () => {
  const snap = snapshot(serverKeys(pkg), inspector({ 'completion.maxNewTokens': 32, 'steering.mode': 'mask' }), {
    trusted: true,
  });
  assert.deepEqual(snap.steerlsp, { completion: { maxNewTokens: 32 }, steering: { mode: 'mask' } });
  assert.deepEqual([...snap.set].sort(), ['completion.maxNewTokens', 'steering.mode']);
});

test('workspace values win over user values', () => {
  const snap = snapshot(
    serverKeys(pkg),
    inspector({ 'completion.maxNewTokens': 32 }, { 'completion.maxNewTokens': 64 }),
    { trusted: true },
  );
  assert.deepEqual(snap.steerlsp, { completion: { maxNewTokens: 64 } });
});

test('a setting removed since the last snapshot is sent at its default', () => {
  const keys = serverKeys(pkg);
  const first = snapshot(keys, inspector({ 'completion.maxNewTokens': 32 }), { trusted: true });
  const second = snapshot(keys, inspector({}), { trusted: true, previouslySet: first.set });
  assert.deepEqual(second.steerlsp, { completion: { maxNewTokens: 48 } });
  assert.equal(second.set.size, 0);
  const third = snapshot(keys, inspector({}), { trusted: true, previouslySet: second.set });
  assert.deepEqual(third.steerlsp, {});
});

test('an untrusted workspace cannot choose the model or trust itself', () => {
  const workspace = { 'model.trustRemoteCode': true, 'python.trustWorkspace': true, 'completion.maxLines': 3 };
  const snap = snapshot(serverKeys(pkg), inspector({}, workspace), { trusted: false });
  assert.deepEqual(snap.steerlsp, { completion: { maxLines: 3 } });
  assert.equal(explicitValue('model.name', { globalValue: 'mine', workspaceValue: 'theirs' }, false), 'mine');
  assert.equal(explicitValue('model.name', { globalValue: 'mine', workspaceValue: 'theirs' }, true), 'theirs');
});

test("the Python extension's interpreter becomes python.environment unless one is set", () => {
  const keys = serverKeys(pkg);
  const chosen = snapshot(keys, inspector(), { trusted: true, interpreter: '/p/.venv/bin/python' });
  assert.deepEqual(chosen.steerlsp, { python: { environment: '/p/.venv/bin/python' } });
  const own = snapshot(keys, inspector({ 'python.environment': '/other' }), { trusted: true, interpreter: '/p/py' });
  assert.deepEqual(own.steerlsp, { python: { environment: '/other' } });
  const untrusted = snapshot(keys, inspector(), { trusted: false, interpreter: '/p/py' });
  assert.deepEqual(untrusted.steerlsp, {});
});

test('initializationOptions and didChangeConfiguration carry pylsp beside steerlsp', () => {
  const pylsp = { plugins: { pycodestyle: { enabled: false } } };
  assert.deepEqual(initializationOptions({ completion: { maxLines: 3 } }, pylsp), {
    steerlsp: { completion: { maxLines: 3 } },
    pylsp,
  });
  assert.deepEqual(initializationOptions({}, {}), { steerlsp: {} });
  // Without a `steerlsp` key the server would read the whole object as its section.
  assert.deepEqual(configurationParams({}, pylsp), { settings: { steerlsp: {}, pylsp } });
  assert.deepEqual(configurationParams({}, undefined), { settings: { steerlsp: {} } });
});

test('changing how the server starts restarts it; other settings do not', () => {
  assert.ok(needsRestart((section) => section === 'steerlsp.pythonPath'));
  assert.ok(needsRestart((section) => section === 'steerlsp.serverArgs'));
  assert.ok(!needsRestart((section) => section === 'steerlsp.completion.maxNewTokens'));
});
