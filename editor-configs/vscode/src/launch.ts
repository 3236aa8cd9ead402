// Which command starts steerlsp. Pure: the probes (does this interpreter have steerlsp,
// where is `steerlsp` on PATH) are passed in.

export interface LaunchSettings {
  serverPath: string;
  pythonPath: string;
  serverArgs: readonly string[];
  useSelectedInterpreter: boolean;
}

export interface Probes {
  /** The Python extension's selected interpreter, if it is installed and has one. */
  selectedInterpreter(): Promise<string | undefined>;
  /** Whether `python -P -c 'import steerlsp'` would work. */
  hasSteerlsp(python: string): Promise<boolean>;
  /** The absolute path of `name` on PATH, if any. */
  onPath(name: string): Promise<string | undefined>;
}

export interface Launch {
  command: string;
  args: string[];
  /** Where the command came from, for the output channel and the status tooltip. */
  source: string;
}

export interface LaunchError {
  error: string;
}

/** `-P`: the workspace directory is not put on sys.path, so a `steerlsp/` folder in the
 * project is never imported (Python 3.11+, which steerlsp needs anyway). */
export function pythonLaunch(python: string, serverArgs: readonly string[], source: string): Launch {
  return { command: python, args: ['-P', '-m', 'steerlsp', ...serverArgs], source };
}

/**
 * In order: `steerlsp.serverPath`, `steerlsp.pythonPath`, the Python extension's
 * interpreter when it has steerlsp installed, `steerlsp` on PATH.
 */
export async function resolveLaunch(settings: LaunchSettings, probes: Probes): Promise<Launch | LaunchError> {
  const args = [...settings.serverArgs];
  if (settings.serverPath) {
    return { command: settings.serverPath, args, source: 'steerlsp.serverPath' };
  }
  if (settings.pythonPath) {
    if (!(await probes.hasSteerlsp(settings.pythonPath))) {
      return {
        error:
          `steerlsp is not installed for ${settings.pythonPath} (steerlsp.pythonPath), or it is ` +
          `older than Python 3.11. Install it there: \`${settings.pythonPath} -m pip install /path/to/steerlsp\`.`,
      };
    }
    return pythonLaunch(settings.pythonPath, args, 'steerlsp.pythonPath');
  }
  let selected: string | undefined;
  if (settings.useSelectedInterpreter) {
    selected = await probes.selectedInterpreter();
    if (selected && (await probes.hasSteerlsp(selected))) {
      return pythonLaunch(selected, args, "the Python extension's selected interpreter");
    }
  }
  const found = await probes.onPath('steerlsp');
  if (found) {
    return { command: found, args, source: 'PATH' };
  }
  const hint = selected ? `, or into the selected interpreter ${selected}` : '';
  return {
    error:
      'steerlsp was not found: set steerlsp.serverPath or steerlsp.pythonPath, ' +
      `or install it on PATH (pipx install /path/to/steerlsp)${hint}.`,
  };
}

export function isLaunchError(value: Launch | LaunchError): value is LaunchError {
  return 'error' in value;
}
