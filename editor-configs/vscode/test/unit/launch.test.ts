import assert from 'node:assert/strict';
import { test } from 'node:test';

import { isLaunchError, LaunchSettings, Probes, resolveLaunch } from '../../src/launch';

const NONE: LaunchSettings = { serverPath: '', pythonPath: '', serverArgs: [], useSelectedInterpreter: true };

function probes(options: { selected?: string; withSteerlsp?: string[]; path?: string }): Probes {
  return {
    selectedInterpreter: async () => options.selected,
    hasSteerlsp: async (python) => (options.withSteerlsp ?? []).includes(python),
    onPath: async () => options.path,
  };
}

test('serverPath wins and takes the extra args', async () => {
  const launch = await resolveLaunch(
    { ...NONE, serverPath: '/v/bin/steerlsp', pythonPath: '/v/bin/python', serverArgs: ['--log-level', 'info'] },
    probes({ path: '/usr/bin/steerlsp' }),
  );
  assert.deepEqual(launch, { command: '/v/bin/steerlsp', args: ['--log-level', 'info'], source: 'steerlsp.serverPath' });
});

test('pythonPath runs python -P -m steerlsp when steerlsp is installed there', async () => {
  const launch = await resolveLaunch({ ...NONE, pythonPath: '/v/bin/python' }, probes({ withSteerlsp: ['/v/bin/python'] }));
  assert.deepEqual(launch, { command: '/v/bin/python', args: ['-P', '-m', 'steerlsp'], source: 'steerlsp.pythonPath' });
});

test('pythonPath without steerlsp is an error that says how to install it', async () => {
  const launch = await resolveLaunch({ ...NONE, pythonPath: '/v/bin/python' }, probes({ path: '/usr/bin/steerlsp' }));
  assert.ok(isLaunchError(launch));
  assert.match(launch.error, /\/v\/bin\/python -m pip install/);
});

test("the Python extension's interpreter is used when it has steerlsp", async () => {
  const launch = await resolveLaunch(NONE, probes({ selected: '/p/.venv/bin/python', withSteerlsp: ['/p/.venv/bin/python'] }));
  assert.ok(!isLaunchError(launch));
  assert.equal(launch.command, '/p/.venv/bin/python');
  assert.match(launch.source, /Python extension/);
});

test('otherwise steerlsp on PATH', async () => {
  const launch = await resolveLaunch(NONE, probes({ selected: '/p/.venv/bin/python', path: '/home/u/.local/bin/steerlsp' }));
  assert.deepEqual(launch, { command: '/home/u/.local/bin/steerlsp', args: [], source: 'PATH' });
  const off = await resolveLaunch(
    { ...NONE, useSelectedInterpreter: false },
    probes({ selected: '/p/py', withSteerlsp: ['/p/py'], path: '/bin/steerlsp' }),
  );
  assert.ok(!isLaunchError(off) && off.source === 'PATH');
});

test('nothing found: an error naming the settings and the selected interpreter', async () => {
  const launch = await resolveLaunch(NONE, probes({ selected: '/p/.venv/bin/python' }));
  assert.ok(isLaunchError(launch));
  assert.match(launch.error, /steerlsp\.serverPath/);
  assert.match(launch.error, /\/p\/\.venv\/bin\/python/);
});
