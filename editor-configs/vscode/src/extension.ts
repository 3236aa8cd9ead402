// The steerlsp extension: starts the server, forwards the settings, and wires the
// status item and the commands. Pure parts: settings.ts, launch.ts, status.ts, results.ts.

import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  Executable,
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  RevealOutputChannelOn,
  State,
  TransportKind,
} from 'vscode-languageclient/node';

import { ask, ResultsView } from './commands';
import { isLaunchError, Launch, resolveLaunch } from './launch';
import * as python from './python';
import { MethodName } from './results';
import {
  configurationParams,
  explicitValue,
  initializationOptions,
  needsRestart,
  PackageJson,
  serverKeys,
  snapshot,
} from './settings';
import { StatusItem } from './statusBar';

const REQUEST_FAILED = -32803; // the model is loading, failed or off

class Controller implements vscode.Disposable {
  client: LanguageClient | undefined;
  private launch: Launch | undefined;
  private previouslySet = new Set<string>();
  private readonly keys: string[];
  private starting: Promise<void> | undefined;

  constructor(
    packageJson: PackageJson,
    private readonly output: vscode.LogOutputChannel,
    private readonly status: StatusItem,
  ) {
    this.keys = serverKeys(packageJson);
  }

  /** The `steerlsp` section to send, and the keys it has set. */
  private async settings(): Promise<{ steerlsp: Record<string, unknown>; pylsp: unknown }> {
    const config = vscode.workspace.getConfiguration('steerlsp');
    const interpreter = config.get<boolean>('useSelectedInterpreter', true) ? await python.selectedInterpreter() : undefined;
    const snap = snapshot(this.keys, (key) => config.inspect(key), {
      trusted: vscode.workspace.isTrusted,
      previouslySet: this.previouslySet,
      interpreter,
    });
    this.previouslySet = snap.set;
    return { steerlsp: snap.steerlsp, pylsp: explicitValue('pylsp', config.inspect('pylsp'), vscode.workspace.isTrusted) };
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    const config = vscode.workspace.getConfiguration('steerlsp');
    const trusted = vscode.workspace.isTrusted;
    // In Restricted Mode the workspace may not choose what runs (package.json
    // restrictedConfigurations): only the user's own values count, and the selected
    // interpreter (perhaps the workspace's .venv) does not run the server.
    const own = <T>(key: string, fallback: T): T =>
      (explicitValue(key, config.inspect(key), trusted) as T | undefined) ?? fallback;
    const found = await resolveLaunch(
      {
        serverPath: own('serverPath', ''),
        pythonPath: own('pythonPath', ''),
        serverArgs: own<string[]>('serverArgs', []),
        useSelectedInterpreter: trusted && config.get<boolean>('useSelectedInterpreter', true),
      },
      { selectedInterpreter: () => python.selectedInterpreter(), hasSteerlsp: python.hasSteerlsp, onPath: python.onPath },
    );
    if (isLaunchError(found)) {
      this.output.error(found.error);
      this.status.detach('error', found.error);
      void vscode.window.showErrorMessage(`steerlsp: ${found.error}`, 'Open Settings').then((choice) => {
        if (choice) {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'steerlsp.serverPath');
        }
      });
      return;
    }
    this.launch = found;
    this.output.info(`starting ${found.command} ${found.args.join(' ')} (from ${found.source})`);
    this.previouslySet = new Set();
    const { steerlsp, pylsp } = await this.settings();
    const server: Executable = { command: found.command, args: found.args, transport: TransportKind.stdio };
    const options: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'untitled', language: 'python' },
      ],
      initializationOptions: initializationOptions(steerlsp, pylsp),
      outputChannel: this.output,
      // Failed requests (the model still loading) go to the output, never a popup.
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: {
        provideInlineCompletionItems: async (document, position, context, token, next) => {
          if (!this.status.acceptsRequests) {
            return null; // loading, failed or off: the server would only refuse
          }
          this.status.generating(+1);
          try {
            return await next(document, position, context, token);
          } catch (error) {
            if (error instanceof ResponseError && error.code === REQUEST_FAILED) {
              this.status.pollSoon();
              return null;
            }
            throw error;
          } finally {
            this.status.generating(-1);
          }
        },
      },
    };
    const client = new LanguageClient('steerlsp', 'steerlsp', server, options);
    // Also after vscode-languageclient restarts a crashed server by itself.
    client.onDidChangeState((event) => {
      if (this.client !== client) {
        return; // stopped on purpose
      }
      if (event.newState === State.Running) {
        this.status.attach(client, found.source);
      } else if (event.newState === State.Stopped) {
        this.status.detach('error', 'The language server stopped; see the steerlsp output.');
      }
    });
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.status.detach('error', `steerlsp did not start: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.status.detach('stopped');
    if (client?.needsStop()) {
      await client.stop();
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Send the settings as workspace/didChangeConfiguration. */
  async sendSettings(): Promise<void> {
    const client = this.client;
    if (!client?.isRunning()) {
      return;
    }
    const { steerlsp, pylsp } = await this.settings();
    await client.sendNotification(DidChangeConfigurationNotification.type, configurationParams(steerlsp, pylsp));
    this.status.pollSoon(); // a model setting reloads the model
  }

  async configurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!event.affectsConfiguration('steerlsp')) {
      return;
    }
    if (needsRestart((section) => event.affectsConfiguration(section))) {
      await this.restart();
    } else {
      await this.sendSettings();
    }
  }

  /** The selected interpreter changed: a new process if it runs the server, else new settings. */
  async interpreterChanged(): Promise<void> {
    if (this.launch?.source.startsWith("the Python extension's")) {
      await this.restart();
    } else {
      await this.sendSettings();
    }
  }

  dispose(): void {
    void this.stop();
  }
}

let controller: Controller | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('steerlsp', { log: true });
  const status = new StatusItem(() => {
    // Requests made while the model loaded got nothing: ask again where the cursor is.
    if (vscode.window.activeTextEditor?.document.languageId === 'python') {
      void vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
    }
  });
  const view = new ResultsView();
  controller = new Controller(context.extension.packageJSON as PackageJson, output, status);
  const current = controller;
  const chatlsp: [string, MethodName][] = [
    ['steerlsp.showExpectedType', 'expectedType'],
    ['steerlsp.showRelevantTypes', 'relevantTypes'],
    ['steerlsp.showRelevantHeaders', 'relevantHeaders'],
    ['steerlsp.showTutorial', 'aiTutorial'],
    ['steerlsp.showErrorReport', 'errorReport'],
    ['steerlsp.explain', 'explain'],
  ];
  context.subscriptions.push(
    output,
    status,
    view,
    current,
    ...chatlsp.map(([command, name]) => vscode.commands.registerCommand(command, () => ask(name, current.client, view))),
    vscode.commands.registerCommand('steerlsp.restart', () => current.restart()),
    vscode.commands.registerCommand('steerlsp.showOutput', () => output.show()),
    vscode.commands.registerCommand('steerlsp.showStatus', async () => {
      status.pollSoon();
      output.info(`status: ${JSON.stringify(status.last ?? 'not running', null, 2)}`);
      output.show(true);
    }),
    vscode.workspace.onDidChangeConfiguration((event) => current.configurationChanged(event)),
    vscode.workspace.onDidGrantWorkspaceTrust(() => current.restart()),
  );
  const interpreterWatch = await python.onInterpreterChange(() => void current.interpreterChanged());
  if (interpreterWatch) {
    context.subscriptions.push(interpreterWatch);
  }
  await current.start();
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}
