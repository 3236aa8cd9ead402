// ChatLSP and steerlsp/explain results as Markdown documents. Pure.
//
// Locations are LSP's: 0-based lines, so a link says `line + 1`.

export interface MarkupContent {
  kind: string;
  value: string;
}

export interface Location {
  uri: string;
  range: { start: { line: number; character: number } };
}

export interface Diagnostic {
  range: { start: { line: number; character: number } };
  message: string;
  severity?: number;
  code?: string | number;
  source?: string;
}

/** The request, its command-palette name and its document's title. */
export interface Method {
  method: string;
  title: string;
}

export const METHODS = {
  expectedType: { method: 'textDocument/expectedType', title: 'Expected type' },
  relevantTypes: { method: 'textDocument/relevantTypes', title: 'Relevant types' },
  relevantHeaders: { method: 'textDocument/relevantHeaders', title: 'Relevant headers' },
  aiTutorial: { method: 'textDocument/aiTutorial', title: 'Project facts and style' },
  errorReport: { method: 'textDocument/errorReport', title: 'Error report' },
  explain: { method: 'steerlsp/explain', title: 'Last completion explained' },
} as const satisfies Record<string, Method>;

export type MethodName = keyof typeof METHODS;

/** `file:///p/cart.py` at line 26 -> `[cart.py:27](file:///p/cart.py#L27)`. */
export function locationLink(location: Location | undefined): string {
  if (!location || typeof location.uri !== 'string') {
    return '';
  }
  const line = (location.range?.start?.line ?? 0) + 1;
  const name = decodeURIComponent(location.uri.split('/').pop() ?? location.uri);
  return `[${name}:${line}](${location.uri}#L${line})`;
}

/** A fenced block that no backtick run inside `text` can close. */
export function fenced(text: string, language = ''): string {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${language}\n${text.replace(/\n+$/, '')}\n${fence}`;
}

/** Markup as Markdown: Markdown as it is, plain text (ChatLSP's, Python) fenced. */
function markup(content: MarkupContent | undefined, language = 'python'): string {
  if (!content || typeof content.value !== 'string') {
    return '_(nothing)_';
  }
  return content.kind === 'markdown' ? content.value : fenced(content.value, language);
}

const SEVERITY = ['', 'error', 'warning', 'information', 'hint'];

function diagnosticLine(diagnostic: Diagnostic): string {
  const start = diagnostic.range.start;
  const severity = SEVERITY[diagnostic.severity ?? 1] ?? 'error';
  const code = diagnostic.code !== undefined ? ` \`${diagnostic.code}\`` : '';
  return `- line ${start.line + 1}, column ${start.character + 1}: ${severity}${code}: ${diagnostic.message}`;
}

/** The heading: the method's title and where it was asked. */
export function heading(name: MethodName, where: string): string {
  return `# ${METHODS[name].title}${where ? ` at ${where}` : ''}\n`;
}

/** The Markdown document for a result of method `name`, asked at `where` (`cart.py:29:16`). */
export function formatResult(name: MethodName, result: unknown, where = ''): string {
  const parts = [heading(name, where)];
  if (result === null || result === undefined) {
    parts.push('_No result._');
    return parts.join('\n') + '\n';
  }
  const r = result as Record<string, unknown>;
  switch (name) {
    case 'expectedType': {
      parts.push(markup(r.content as MarkupContent));
      const link = locationLink(r.location as Location);
      if (link) {
        parts.push(`Annotated at ${link}`);
      }
      break;
    }
    case 'relevantTypes':
    case 'relevantHeaders': {
      const contents = (r.contents as MarkupContent[] | undefined) ?? [];
      const locations = (r.locations as Location[] | undefined) ?? [];
      if (contents.length === 0) {
        parts.push(name === 'relevantTypes' ? '_No types are known for this position._' : '_No functions in scope return the expected type._');
      }
      contents.forEach((content, i) => {
        const link = locationLink(locations[i]);
        parts.push(`## ${i + 1}${link ? `. ${link}` : ''}\n\n${markup(content)}`);
      });
      break;
    }
    case 'aiTutorial': {
      const content = r.content as MarkupContent | undefined;
      // Plain text that is already written as Markdown (headings, lists).
      parts.push(content?.value ?? '_(nothing)_');
      break;
    }
    case 'errorReport': {
      const diagnostics = (r.diagnostics as Diagnostic[] | undefined) ?? [];
      parts.push(r.needsRepair ? '**Needs repair.**' : 'No errors that need repair.');
      if (diagnostics.length > 0) {
        parts.push(diagnostics.map(diagnosticLine).join('\n'));
      }
      const content = r.content as MarkupContent | undefined;
      if (content?.value) {
        parts.push('## Feedback for a prompt\n\n' + fenced(content.value, 'text'));
      }
      break;
    }
    case 'explain':
      parts.push(...explainParts(r));
      break;
  }
  return parts.join('\n\n').replace(/\n{3,}/g, '\n\n') + '\n';
}

function explainParts(r: Record<string, unknown>): string[] {
  if (r.completion === null || r.completion === undefined) {
    return ['_No completion in this document yet (or it was closed since)._'];
  }
  const parts = [fenced(String(r.completion), 'python')];
  const facts = [`- steered: ${r.steered ? 'yes' : 'no'}`];
  if (typeof r.prompt_tokens === 'number') {
    facts.push(`- prompt tokens: ${r.prompt_tokens}`);
  }
  if (Array.isArray(r.context)) {
    facts.push(`- ChatLSP context in the prompt: ${r.context.length ? r.context.join(', ') : 'none'}`);
  }
  if (typeof r.rounds === 'number') {
    facts.push(`- error rounds before it: ${r.rounds}`);
  }
  parts.push(facts.join('\n'));
  const trace = r.trace as Record<string, unknown> | null | undefined;
  if (trace) {
    const counts = ['triggers', 'queries', 'rankings', 'walks', 'hints', 'interrupts', 'changed']
      .filter((key) => Array.isArray(trace[key]))
      .map((key) => `${key}: ${(trace[key] as unknown[]).length}`);
    const waited = typeof trace.waited_ms === 'number' ? `, waited ${Math.round(trace.waited_ms)} ms for pylsp` : '';
    parts.push(`## Trace\n\n${counts.join(', ')}${waited}`);
    parts.push(fenced(JSON.stringify(trace, null, 2), 'json'));
  }
  return parts;
}

/** A request error as one line: `steerlsp: the model is still loading` etc. */
export function errorMessage(title: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return `${title}: ${message}`;
}
