// The status-bar item's text, from `steerlsp/status` and the client's own state. Pure.

/** `steerlsp/status` `.model.state`. */
export type ModelState = 'loading' | 'ready' | 'failed' | 'disabled';

/** What the item shows: the model's state, or the client's when there is no server. */
export type Phase = 'starting' | ModelState | 'stopped' | 'error';

export interface ModelStatus {
  state?: ModelState;
  error?: string;
  model?: string;
  served?: number;
  accepted?: number;
}

export interface StatusInfo extends ModelStatus {
  phase: Phase;
  /** Inline completion requests in flight. */
  generating: number;
  /** Where the server command came from. */
  source?: string;
}

export interface StatusView {
  text: string;
  tooltip: string;
  /** Show the item in the error colours. */
  error: boolean;
}

const STATES: readonly string[] = ['loading', 'ready', 'failed', 'disabled'];

/** The model part of a `steerlsp/status` result; anything unexpected reads as unknown. */
export function modelStatus(result: unknown): ModelStatus {
  const model = (result as { model?: Record<string, unknown> } | null)?.model;
  if (model === null || typeof model !== 'object') {
    return {};
  }
  const state = typeof model.state === 'string' && STATES.includes(model.state) ? model.state : undefined;
  return {
    state: state as ModelState | undefined,
    error: typeof model.error === 'string' ? model.error : undefined,
    model: typeof model.model === 'string' ? model.model : undefined,
    served: typeof model.served === 'number' ? model.served : undefined,
    accepted: typeof model.accepted === 'number' ? model.accepted : undefined,
  };
}

/** The item's text (with a codicon) and tooltip. */
export function statusView(info: StatusInfo): StatusView {
  const model = info.model && info.model !== 'default' ? info.model : 'Gemma 3 270M (default)';
  const lines: string[] = [];
  let text: string;
  let error = false;
  switch (info.phase) {
    case 'starting':
      text = '$(loading~spin) steerlsp';
      lines.push('Starting the language server…');
      break;
    case 'loading':
      text = '$(loading~spin) steerlsp: loading';
      lines.push(`Loading the model ${model}. Hover, diagnostics and the ChatLSP commands work already; ghost text starts when it is ready.`);
      break;
    case 'ready':
      text = info.generating > 0 ? '$(sync~spin) steerlsp: generating' : '$(sparkle) steerlsp';
      lines.push(info.generating > 0 ? `Writing a suggestion with ${model}…` : `Ready: ${model}.`);
      break;
    case 'disabled':
      text = '$(circle-slash) steerlsp: no model';
      lines.push('No model is loaded (--no-model or steerlsp.completion.enabled: false); pylsp features and ChatLSP work.');
      break;
    case 'failed':
      text = '$(error) steerlsp: model failed';
      lines.push(`The model could not be loaded: ${info.error ?? 'see the steerlsp output'}.`);
      error = true;
      break;
    case 'error':
      text = '$(error) steerlsp';
      lines.push(info.error ?? 'The language server is not running; see the steerlsp output.');
      error = true;
      break;
    case 'stopped':
      text = '$(debug-stop) steerlsp';
      lines.push('The language server is stopped.');
      break;
  }
  if (info.served !== undefined && (info.phase === 'ready' || info.phase === 'disabled')) {
    lines.push(`Suggestions served: ${info.served}, accepted: ${info.accepted ?? 0}.`);
  }
  if (info.source) {
    lines.push(`Server from: ${info.source}.`);
  }
  lines.push('Click for the full status.');
  return { text, tooltip: lines.join('\n'), error };
}

/** How long until the next `steerlsp/status` poll: often while something is changing. */
export function pollDelayMs(phase: Phase): number | undefined {
  switch (phase) {
    case 'starting':
    case 'loading':
      return 1000;
    case 'ready':
    case 'failed':
    case 'disabled':
      return 15000;
    default:
      return undefined;
  }
}

/** Whether the model just became ready: the editor asks for a suggestion again then,
 * because the requests made while it loaded got nothing. */
export function becameReady(before: Phase, after: Phase): boolean {
  return after === 'ready' && before !== 'ready';
}
