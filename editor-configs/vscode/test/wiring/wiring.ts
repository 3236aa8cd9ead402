// The extension's LSP wiring against the real steerlsp, without VS Code (which cannot
// be downloaded here): a vscode-languageserver-protocol client over stdio sends what
// the extension sends (its settings module builds initializationOptions and
// didChangeConfiguration), and checks what the extension relies on.
//
//   node out/test/wiring/wiring.js --command '["steerlsp"]' --root DIR [--model]
//
// DIR is a copy of the example project (steerlsp/example/project). With --model it also waits for the model
// and asks for an inline completion. Prints one JSON line of facts; exits 1 on failure.

import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createProtocolConnection,
  InitializeResult,
  ProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-languageserver-protocol/node';

import { formatResult, METHODS } from '../../src/results';
import { configurationParams, initializationOptions, Inspected, serverKeys, snapshot } from '../../src/settings';
import { modelStatus, statusView } from '../../src/status';
import { packageJson } from '../packageJson';

interface Options {
  command: string[];
  root: string;
  model: boolean;
  modelTimeoutMs: number;
}

function options(argv: string[]): Options {
  const value = (flag: string): string | undefined => {
    const at = argv.indexOf(flag);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  const command = value('--command');
  const root = value('--root');
  if (!command || !root) {
    throw new Error('usage: wiring.js --command JSON_ARRAY --root DIR [--model] [--model-timeout SECONDS]');
  }
  return {
    command: JSON.parse(command),
    root: path.resolve(root),
    model: argv.includes('--model'),
    modelTimeoutMs: Number(value('--model-timeout') ?? '300') * 1000,
  };
}

/** Every server setting at package.json's default, as if the user had set them all,
 * and a few of them changed: the server must accept every one of them. */
function extensionSettings(user: Record<string, unknown>): Record<string, unknown> {
  const pkg = packageJson();
  const properties: Record<string, { default?: unknown }> = Object.assign(
    {},
    ...pkg.contributes.configuration.map((group: { properties: object }) => group.properties),
  );
  const inspect = (key: string): Inspected => ({
    defaultValue: properties[`steerlsp.${key}`]?.default,
    globalValue: key in user ? user[key] : properties[`steerlsp.${key}`]?.default,
  });
  return snapshot(serverKeys(pkg), inspect, { trusted: true }).steerlsp;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const opts = options(process.argv.slice(2));
  const facts: Record<string, unknown> = {};
  const started = Date.now();
  const child: ChildProcess = spawn(opts.command[0], opts.command.slice(1), {
    cwd: opts.root,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk.toString()));
  const connection: ProtocolConnection = createProtocolConnection(
    new StreamMessageReader(child.stdout!),
    new StreamMessageWriter(child.stdin!),
  );
  const messages: { type: number; message: string }[] = [];
  const progress: unknown[] = [];
  connection.onNotification('window/showMessage', (params: { type: number; message: string }) => {
    messages.push(params);
  });
  connection.onNotification('$/progress', (params: unknown) => {
    progress.push(params);
  });
  connection.onRequest('workspace/configuration', (params: { items: unknown[] }) => params.items.map(() => null));
  for (const method of ['window/workDoneProgress/create', 'client/registerCapability', 'client/unregisterCapability']) {
    connection.onRequest(method, () => null);
  }
  connection.listen();
  try {
    await run(connection, opts, facts, messages, progress);
    facts.ok = true;
  } catch (error) {
    facts.ok = false;
    facts.error = error instanceof Error ? (error.stack ?? error.message) : String(error);
    facts.stderr = stderr.slice(-4000);
  } finally {
    facts.seconds = (Date.now() - started) / 1000;
    child.kill();
    connection.dispose();
  }
  process.stdout.write(JSON.stringify(facts) + '\n');
  process.exit(facts.ok ? 0 : 1);
}

async function run(
  connection: ProtocolConnection,
  opts: Options,
  facts: Record<string, unknown>,
  messages: { type: number; message: string }[],
  progress: unknown[],
): Promise<void> {
  const pylsp = { plugins: { pycodestyle: { maxLineLength: 100 } } };
  const steerlsp = extensionSettings({ 'completion.maxNewTokens': 24, 'chatlsp.timeoutMs': 20000 });
  const rootUri = pathToFileURL(opts.root).href;
  const init: InitializeResult = await connection.sendRequest('initialize', {
    processId: process.pid,
    clientInfo: { name: 'steerlsp wiring test (vscode-languageclient settings)' },
    rootUri,
    workspaceFolders: [{ uri: rootUri, name: path.basename(opts.root) }],
    capabilities: {
      general: { positionEncodings: ['utf-16'] },
      window: { workDoneProgress: true },
      workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: true } },
      textDocument: {
        synchronization: { dynamicRegistration: true, didSave: true },
        hover: { contentFormat: ['markdown', 'plaintext'] },
        completion: { completionItem: { snippetSupport: true } },
        inlineCompletion: { dynamicRegistration: true },
      },
    },
    initializationOptions: initializationOptions(steerlsp, pylsp),
  });
  const capabilities = init.capabilities as Record<string, any>;
  facts.server = init.serverInfo;
  assert.equal(init.serverInfo?.name, 'steerlsp');
  assert.ok(capabilities.inlineCompletionProvider, 'inlineCompletionProvider is advertised');
  const chatlsp = capabilities.experimental?.chatlsp;
  for (const name of ['expectedType', 'relevantTypes', 'relevantHeaders', 'aiTutorial', 'errorReport'] as const) {
    assert.ok(chatlsp?.methods?.includes(METHODS[name].method), `experimental.chatlsp lists ${METHODS[name].method}`);
    assert.ok(capabilities.executeCommandProvider?.commands?.includes(`steerlsp.${name}`), `command steerlsp.${name}`);
  }
  assert.ok(capabilities.experimental?.steerlsp?.methods?.includes('steerlsp/status'));
  facts.capabilities = { inline: true, chatlsp: chatlsp.methods.length };
  connection.sendNotification('initialized', {});

  const file = path.join(opts.root, 'shop', 'cart.py');
  const uri = pathToFileURL(file).href;
  const text = readFileSync(file, 'utf8');
  connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });
  // A settings change as the extension sends it (pylsp's settings beside steerlsp's).
  connection.sendNotification(
    'workspace/didChangeConfiguration',
    configurationParams(extensionSettings({ 'completion.maxNewTokens': 32 }), pylsp),
  );

  // `return discount(self.total(), percent)`: the argument of `return` in `-> Price`.
  const line = text.split('\n').findIndex((l) => l.includes('return discount('));
  const hole = { textDocument: { uri }, position: { line, character: 15 } };
  const expected: any = await connection.sendRequest(METHODS.expectedType.method, hole);
  assert.equal(expected?.content?.value, 'Price');
  const shown = formatResult('expectedType', expected, `cart.py:${line + 1}:16`);
  assert.match(shown, /```python\nPrice\n```/);
  const types: any = await connection.sendRequest(METHODS.relevantTypes.method, hole);
  assert.ok(types.contents.some((c: { value: string }) => c.value.includes('class Price')), 'relevantTypes has Price');
  const viaCommand: any = await connection.sendRequest('workspace/executeCommand', {
    command: 'steerlsp.expectedType',
    arguments: [hole],
  });
  assert.equal(viaCommand?.content?.value, 'Price');
  const report: any = await connection.sendRequest(METHODS.errorReport.method, { ...hole, completion: 'discount(self.totl(), percent)' });
  assert.equal(typeof report.needsRepair, 'boolean');
  facts.chatlsp = { expectedType: expected.content.value, relevantTypes: types.contents.length, errorReport: report.needsRepair };

  const hover: any = await connection.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line, character: 17 } });
  facts.hover = Boolean(hover?.contents);

  let status: any = await connection.sendRequest('steerlsp/status');
  let model = modelStatus(status);
  assert.ok(model.state && ['loading', 'ready', 'disabled'].includes(model.state), `model state ${model.state}`);
  assert.equal(status.upstream?.state, 'running');
  facts.status = { first: model.state, text: statusView({ phase: model.state, generating: 0, ...model }).text };

  const explained: any = await connection.sendRequest('steerlsp/explain', { textDocument: { uri } });
  assert.equal(explained.completion, null);

  if (opts.model) {
    const waitStart = Date.now();
    const deadline = waitStart + opts.modelTimeoutMs;
    const seen = new Set<string>([model.state!]);
    while (model.state === 'loading' && Date.now() < deadline) {
      await sleep(500);
      status = await connection.sendRequest('steerlsp/status');
      model = modelStatus(status);
      seen.add(model.state!);
    }
    assert.equal(model.state, 'ready', `model became ${model.state}: ${model.error ?? ''}`);
    facts.waitedForModelS = (Date.now() - waitStart) / 1000;
    facts.states = [...seen];
    // A function whose body starts with `cart.`: steering writes one of Cart's members.
    const added = '\n\ndef grand_total(cart: Cart) -> Price:\n    return cart.';
    const lines = text.split('\n');
    const end = { line: lines.length - 1, character: lines[lines.length - 1].length };
    connection.sendNotification('textDocument/didChange', {
      textDocument: { uri, version: 2 },
      contentChanges: [{ range: { start: end, end }, text: added }],
    });
    const at = { line: end.line + 3, character: '    return cart.'.length };
    const began = Date.now();
    const inline: any = await connection.sendRequest('textDocument/inlineCompletion', {
      textDocument: { uri },
      position: at,
      context: { triggerKind: 1 },
    });
    facts.inlineMs = Date.now() - began;
    const items = Array.isArray(inline) ? inline : inline?.items;
    assert.ok(items?.length > 0, 'an inline completion item');
    const insert = typeof items[0].insertText === 'string' ? items[0].insertText : items[0].insertText.value;
    facts.inline = insert;
    assert.ok(insert.trim().length > 0, "a non-empty suggestion");
    const after: any = await connection.sendRequest('steerlsp/explain', { textDocument: { uri } });
    assert.equal(typeof after.completion, 'string');
    facts.explained = { steered: after.steered, completion: after.completion, trace: process.env.WIRING_TRACE ? after.trace : undefined };
    assert.match(formatResult('explain', after, 'cart.py'), /- steered: (yes|no)/);
  }

  const problems = messages.filter((m) => /invalid settings|unknown setting/i.test(m.message));
  assert.deepEqual(problems, [], 'the server accepts every setting the extension sends');
  facts.showMessages = messages.map((m) => m.message);
  facts.progress = progress.length;
  await connection.sendRequest('shutdown');
  connection.sendNotification('exit');
}

void main();
