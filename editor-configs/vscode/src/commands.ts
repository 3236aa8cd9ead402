// Command-palette commands: the ChatLSP methods and steerlsp/explain, shown as
// read-only Markdown documents beside the editor.

import * as path from 'node:path';
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';

import { errorMessage, formatResult, METHODS, MethodName } from './results';

const SCHEME = 'steerlsp-result';

/** Read-only documents holding the results (no "save changes?" when closed). */
export class ResultsView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(SCHEME, this);

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** One document per kind of result, refreshed on each request. */
  async show(name: MethodName, markdown: string): Promise<void> {
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${METHODS[name].title}.md` });
    this.texts.set(uri.toString(), markdown);
    this.changed.fire(uri);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document, {
      viewColumn: vscode.ViewColumn.Beside,
      preserveFocus: true,
      preview: true,
    });
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}

/** `cart.py:29:16`: where a request was asked, 1-based as editors show it. */
function where(editor: vscode.TextEditor): string {
  const position = editor.selection.active;
  return `${path.basename(editor.document.uri.fsPath)}:${position.line + 1}:${position.character + 1}`;
}

/** Run `name` at the cursor of the active Python editor and show the result. */
export async function ask(name: MethodName, client: LanguageClient | undefined, view: ResultsView): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== 'python') {
    void vscode.window.showWarningMessage('steerlsp: put the cursor in a Python file first.');
    return;
  }
  if (!client?.isRunning()) {
    void vscode.window.showWarningMessage('steerlsp: the language server is not running (steerlsp: Restart the Server).');
    return;
  }
  const document = { uri: client.code2ProtocolConverter.asUri(editor.document.uri) };
  let params: Record<string, unknown> =
    name === 'explain'
      ? { textDocument: document }
      : { ...client.code2ProtocolConverter.asTextDocumentPositionParams(editor.document, editor.selection.active) };
  if (name === 'errorReport') {
    const completion = await vscode.window.showInputBox({
      title: 'steerlsp: error report',
      prompt: 'Code to check as if typed at the cursor (empty: check the line as it is)',
      placeHolder: 'e.g. cart.totl()',
    });
    if (completion === undefined) {
      return;
    }
    params = { ...params, completion };
  }
  const method = METHODS[name];
  try {
    const result = await client.sendRequest(method.method, params);
    await view.show(name, formatResult(name, result, name === 'explain' ? path.basename(editor.document.uri.fsPath) : where(editor)));
  } catch (error) {
    void vscode.window.showErrorMessage(errorMessage(`steerlsp: ${method.title}`, error));
  }
}
