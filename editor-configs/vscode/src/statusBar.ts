// The status-bar item: polls `steerlsp/status` (every second while the model loads,
// every 15 s after) and counts the inline completion requests in flight.

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';

import { becameReady, modelStatus, Phase, pollDelayMs, StatusInfo, statusView } from './status';

export const STATUS_REQUEST = 'steerlsp/status';

export class StatusItem implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private info: StatusInfo = { phase: 'starting', generating: 0 };
  private client: LanguageClient | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The last `steerlsp/status` result, for the "Show Status" command. */
  last: unknown;

  /** `onReady`: the model became ready (the editor asks for a suggestion again). */
  constructor(private readonly onReady: () => void) {
    this.item = vscode.window.createStatusBarItem('steerlsp.status', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'steerlsp';
    this.item.command = 'steerlsp.showStatus';
    this.render();
    this.item.show();
  }

  get phase(): Phase {
    return this.info.phase;
  }

  /** Whether an inline completion request can get an answer (it gets -32803 otherwise). */
  get acceptsRequests(): boolean {
    return this.info.phase === 'ready' || this.info.phase === 'starting';
  }

  attach(client: LanguageClient, source: string): void {
    this.client = client;
    this.last = undefined;
    this.set({ phase: 'starting', generating: 0, source });
    this.pollSoon();
  }

  /** No server: stopped, or could not start (`error` says why). */
  detach(phase: 'stopped' | 'error', error?: string): void {
    this.client = undefined;
    this.clearTimer();
    this.set({ phase, generating: 0, error, source: this.info.source });
  }

  /** Poll now, e.g. after a model setting changed or a request was refused. */
  pollSoon(): void {
    this.schedule(0);
  }

  /** An inline completion request started (+1) or ended (-1). */
  generating(delta: number): void {
    this.set({ ...this.info, generating: Math.max(0, this.info.generating + delta) });
  }

  dispose(): void {
    this.clearTimer();
    this.item.dispose();
  }

  private async poll(): Promise<void> {
    const client = this.client;
    if (!client) {
      return;
    }
    try {
      if (client.isRunning()) {
        const result = await client.sendRequest(STATUS_REQUEST);
        if (client !== this.client) {
          return; // restarted meanwhile
        }
        this.last = result;
        const model = modelStatus(result);
        const before = this.info.phase;
        this.set({ ...this.info, ...model, phase: model.state ?? this.info.phase });
        if (becameReady(before, this.info.phase)) {
          this.onReady();
        }
      }
    } catch {
      // The server is restarting or gone; the client's own state events report that.
    }
    this.schedule(pollDelayMs(this.info.phase));
  }

  private schedule(delay: number | undefined): void {
    this.clearTimer();
    if (delay !== undefined && this.client) {
      this.timer = setTimeout(() => void this.poll(), delay);
    }
  }

  private clearTimer(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private set(info: StatusInfo): void {
    this.info = info;
    this.render();
  }

  private render(): void {
    const view = statusView(this.info);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.error ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }
}
