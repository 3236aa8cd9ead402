// The Python extension (ms-python.python), read through its public API when it is
// installed. Everything here degrades to "no interpreter" rather than failing.

import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';

/** The parts of `exports.environments` used here (see @vscode/python-extension). */
interface Environments {
  getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
  resolveEnvironment?(env: { path: string } | string): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
  onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
}

async function environments(): Promise<Environments | undefined> {
  const extension = vscode.extensions.getExtension('ms-python.python');
  if (!extension) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    const envs = api?.environments;
    return envs && typeof envs.getActiveEnvironmentPath === 'function' ? envs : undefined;
  } catch {
    return undefined;
  }
}

/** The selected interpreter's executable for `resource`'s folder, if there is one. */
export async function selectedInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const envs = await environments();
  if (!envs) {
    return undefined;
  }
  try {
    const active = envs.getActiveEnvironmentPath(resource);
    const resolved = await envs.resolveEnvironment?.(active);
    const executable = resolved?.executable?.uri?.fsPath;
    return executable || (active?.path ? active.path : undefined);
  } catch {
    return undefined;
  }
}

/** Calls `listener` when the user selects another interpreter. */
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const envs = await environments();
  try {
    return envs?.onDidChangeActiveEnvironmentPath?.(listener);
  } catch {
    return undefined;
  }
}

/** Whether `python` is 3.11+ with steerlsp importable, without the cwd on sys.path. */
export function hasSteerlsp(python: string): Promise<boolean> {
  const check = 'import importlib.util, sys; sys.exit(importlib.util.find_spec("steerlsp") is None)';
  return new Promise((resolve) => {
    execFile(python, ['-P', '-c', check], { timeout: 10000 }, (error) => resolve(error === null));
  });
}

/** `name`'s absolute path on PATH, if it is there. */
export async function onPath(name: string): Promise<string | undefined> {
  const extensions = process.platform === 'win32' ? (process.env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';') : [''];
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    for (const extension of extensions) {
      const candidate = path.join(dir, name + extension);
      if (dir && path.isAbsolute(candidate)) {
        try {
          await access(candidate, constants.X_OK);
          return candidate;
        } catch {
          // not here
        }
      }
    }
  }
  return undefined;
}
