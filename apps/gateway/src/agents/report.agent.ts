import { Readable } from 'node:stream';
import type { Agent, AgentInputFile, AgentResult, AgentTask } from './agent.port';

const REPORT_NAME = 'report.md';
const MAX_TASK_CHARS = 10_000;
const PREVIEW_LINES = 10;
const PREVIEW_LINE_CHARS = 200;
const PREVIEW_READ_BYTES = 16 * 1024;

const TEXT_TYPES =
  /^(?:text\/[\w.+-]+|application\/(?:javascript|x-yaml|yaml|x-sh|sql|x-python|(?:[\w.-]+\+)?(?:json|xml)))\s*(?:;|$)/i;

export const isTextType = (contentType: string) => TEXT_TYPES.test(contentType);

/** The first bytes of a stream, then the stream is let go. */
async function head(stream: Readable, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream) {
      chunks.push(chunk as Buffer);
      size += (chunk as Buffer).length;
      if (size >= maxBytes) break;
    }
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks).subarray(0, maxBytes);
}

/** A fenced block that no backtick run inside the text can close early. */
function fenced(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}text\n${text}\n${fence}`;
}

export function fileLine(file: Pick<AgentInputFile, 'filename' | 'bytes' | 'sha256' | 'contentType'>): string {
  return `- ${file.filename}: ${file.bytes} bytes, sha256 ${file.sha256 ?? 'not computed yet'}, ${file.contentType}`;
}

/** The first lines of a text file, decoded leniently and cut to a readable size. */
export function previewLines(bytes: Buffer): string {
  const lines = bytes.toString('utf8').split(/\r?\n/).slice(0, PREVIEW_LINES);
  return lines
    .map((line) => (line.length > PREVIEW_LINE_CHARS ? `${line.slice(0, PREVIEW_LINE_CHARS)}…` : line))
    .join('\n');
}

export function renderReport(
  task: Pick<AgentTask, 'responseId' | 'sessionId' | 'instructions' | 'messages'>,
  files: AgentInputFile[],
  previews: Map<string, string>,
): string {
  const out: string[] = ['# Report', '', `Response ${task.responseId} in session ${task.sessionId}.`, ''];
  if (task.instructions) out.push('## Instructions', '', fenced(task.instructions.slice(0, MAX_TASK_CHARS)), '');
  const taskText = task.messages.map((m) => (m.role === 'user' ? m.text : `[${m.role}] ${m.text}`)).join('\n\n');
  out.push(
    '## Task',
    '',
    taskText
      ? fenced(taskText.length > MAX_TASK_CHARS ? `${taskText.slice(0, MAX_TASK_CHARS)}…` : taskText)
      : '(no text)',
    '',
  );
  out.push(`## Input files (${files.length})`, '');
  if (files.length === 0) out.push('None.', '');
  for (const file of files) out.push(fileLine(file));
  if (files.length > 0) out.push('');
  for (const file of files) {
    const preview = previews.get(file.id);
    if (preview !== undefined) out.push(`### First lines of ${file.filename}`, '', fenced(preview), '');
  }
  return out.join('\n');
}

/**
 * The built-in agent (docs/api.md §4): writes report.md into the session's container, one line per input
 * file with its filename, byte count and SHA-256 (measured by the storage service as the bytes were
 * stored), the task's text, and the first lines of text inputs; answers with text citing the report.
 */
export class ReportAgent implements Agent {
  readonly name = 'report';

  unavailableReason(): string | null {
    return null;
  }

  async run(task: AgentTask): Promise<AgentResult> {
    const previews = new Map<string, string>();
    for (const file of task.files) {
      if (!isTextType(file.contentType) || file.bytes === 0) continue;
      task.signal.throwIfAborted();
      previews.set(file.id, previewLines(await head(await file.open(), PREVIEW_READ_BYTES)));
    }
    const report = renderReport(task, task.files, previews);
    const written = await task.artifacts.write({
      filename: REPORT_NAME,
      contentType: 'text/markdown; charset=utf-8',
      body: Readable.from([Buffer.from(report, 'utf8')]),
    });
    const count = task.files.length;
    const inputs = count === 0 ? 'no input files' : count === 1 ? 'its one input file' : `its ${count} input files`;
    const text = `I've written ${REPORT_NAME} with the task and ${inputs}.`;
    const start = text.indexOf(REPORT_NAME);
    return { text, citations: [{ fileId: written.id, startIndex: start, endIndex: start + REPORT_NAME.length }] };
  }
}
