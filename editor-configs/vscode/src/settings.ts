// The extension's settings as steerlsp reads them: `steerlsp.completion.maxNewTokens`
// in VS Code becomes `{steerlsp: {completion: {maxNewTokens}}}` on the wire
// (initializationOptions, then workspace/didChangeConfiguration). Pure: no `vscode`
// import, so node:test and the wiring test use it as the extension does.

/** Settings that configure the extension itself and never reach the server's section. */
export const CLIENT_KEYS: ReadonlySet<string> = new Set([
  'serverPath',
  'pythonPath',
  'serverArgs',
  'useSelectedInterpreter',
  'pylsp',
  'trace.server',
]);

/** Changing one of these restarts the server: they choose the process. */
export const RESTART_KEYS: readonly string[] = [
  'serverPath',
  'pythonPath',
  'serverArgs',
  'useSelectedInterpreter',
];

/** Settings whose workspace values are ignored in an untrusted workspace (package.json
 * lists the same under `capabilities.untrustedWorkspaces.restrictedConfigurations`). */
export const RESTRICTED_KEYS: ReadonlySet<string> = new Set([
  'serverPath',
  'pythonPath',
  'serverArgs',
  'pylsp', // e.g. plugins.pylint.executable
  'model.name',
  'model.allowDownloads',
  'model.trustRemoteCode',
  'python.environment',
  'python.trustWorkspace',
  'steering.runtimeDeprecation',
]);

/** What `WorkspaceConfiguration.inspect(key)` returns, the parts used here. */
export interface Inspected {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** `inspect` of the `steerlsp` section: key without the `steerlsp.` prefix. */
export type Inspect = (key: string) => Inspected | undefined;

export interface PackageJson {
  contributes?: { configuration?: { properties?: Record<string, unknown> }[] };
}

/** The keys of the server's settings (`model.name`, ...), from package.json. */
export function serverKeys(pkg: PackageJson): string[] {
  const keys: string[] = [];
  for (const group of pkg.contributes?.configuration ?? []) {
    for (const name of Object.keys(group.properties ?? {})) {
      const key = name.replace(/^steerlsp\./, '');
      if (!CLIENT_KEYS.has(key)) {
        keys.push(key);
      }
    }
  }
  return keys;
}

/** The value the user set (folder over workspace over user settings), or undefined.
 * In an untrusted workspace a restricted key keeps only the user's own value. */
export function explicitValue(key: string, inspected: Inspected | undefined, trusted: boolean): unknown {
  if (inspected === undefined) {
    return undefined;
  }
  if (!trusted && RESTRICTED_KEYS.has(key)) {
    return inspected.globalValue;
  }
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}

/** `{"a.b": 1, "a.c": 2}` -> `{a: {b: 1, c: 2}}`. */
export function nest(flat: Record<string, unknown>): Record<string, unknown> {
  const tree: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(flat)) {
    const parts = key.split('.');
    let node = tree;
    for (const part of parts.slice(0, -1)) {
      if (typeof node[part] !== 'object' || node[part] === null) {
        node[part] = {};
      }
      node = node[part] as Record<string, unknown>;
    }
    node[parts[parts.length - 1]] = value;
  }
  return tree;
}

export interface Snapshot {
  /** The nested `steerlsp` section to send. */
  steerlsp: Record<string, unknown>;
  /** The keys the user has set: next time, one no longer set is sent at its default,
   * because the server merges what it gets over what it has. */
  set: Set<string>;
}

export interface SnapshotOptions {
  trusted: boolean;
  /** Keys set last time (see `Snapshot.set`). */
  previouslySet?: ReadonlySet<string>;
  /** The Python extension's interpreter, used as `python.environment` when the user set none. */
  interpreter?: string;
}

/**
 * The `steerlsp` section from the settings the user set. Defaults are left out so
 * that command-line flags (`steerlsp.serverArgs`) keep working; a key that was set
 * before and is not any more is sent at its default.
 */
export function snapshot(keys: readonly string[], inspect: Inspect, options: SnapshotOptions): Snapshot {
  const flat: Record<string, unknown> = {};
  const set = new Set<string>();
  for (const key of keys) {
    const inspected = inspect(key);
    const value = explicitValue(key, inspected, options.trusted);
    if (value !== undefined) {
      flat[key] = value;
      set.add(key);
    } else if (options.previouslySet?.has(key) && inspected?.defaultValue !== undefined) {
      flat[key] = inspected.defaultValue;
    }
  }
  if (options.interpreter && options.trusted && flat['python.environment'] === undefined) {
    flat['python.environment'] = options.interpreter;
  }
  return { steerlsp: nest(flat), set };
}

/** initializationOptions: steerlsp's section, and pylsp's settings when there are any. */
export function initializationOptions(
  steerlsp: Record<string, unknown>,
  pylsp: unknown,
): Record<string, unknown> {
  return withPylsp({ steerlsp }, pylsp);
}

/** workspace/didChangeConfiguration params. `steerlsp` is always present: steerlsp
 * reads an object without it as its own section. */
export function configurationParams(
  steerlsp: Record<string, unknown>,
  pylsp: unknown,
): { settings: Record<string, unknown> } {
  return { settings: withPylsp({ steerlsp }, pylsp) };
}

function withPylsp(base: Record<string, unknown>, pylsp: unknown): Record<string, unknown> {
  if (pylsp !== null && typeof pylsp === 'object' && Object.keys(pylsp).length > 0) {
    return { ...base, pylsp };
  }
  return base;
}

/** Whether a configuration change (`affects(section)`) needs a new server process. */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return RESTART_KEYS.some((key) => affects(`steerlsp.${key}`));
}
