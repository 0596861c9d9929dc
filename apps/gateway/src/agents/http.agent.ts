import type { Agent, AgentCitation, AgentResult, AgentTask } from './agent.port';
import { AgentFailure } from './agent.port';

export interface HttpAgentOptions {
  /** The operator's agent service; undefined when none is configured. */
  url: string | undefined;
  token: string | undefined;
  /** Base URL (no trailing slash) the agent service calls back on. */
  callbackBaseUrl: string;
  requestId: () => string | undefined;
}

const MAX_ANSWER_BYTES = 1024 * 1024;

/** The task as the agent service receives it (documented in docs/agents.md). */
export function taskPayload(task: AgentTask, callbackBaseUrl: string) {
  const api = `${callbackBaseUrl}/v1`;
  return {
    object: 'agent.task' as const,
    response_id: task.responseId,
    session_id: task.sessionId,
    container_id: task.containerId,
    instructions: task.instructions,
    input: task.messages.map((m) => ({ role: m.role, text: m.text })),
    files: task.files.map((f) => ({
      id: f.id,
      filename: f.filename,
      bytes: f.bytes,
      content_type: f.contentType,
      sha256: f.sha256,
      download_url: `${api}/files/${f.id}/content`,
    })),
    api: {
      base_url: api,
      token: task.taskToken,
      expires_at: Math.floor(task.deadline.getTime() / 1000),
      container_files_url: `${api}/containers/${task.containerId}/files`,
    },
  };
}

async function readCapped(res: Response): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES)
      throw new AgentFailure('agent_invalid_output', `The agent service answered more than ${MAX_ANSWER_BYTES} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The agent service's answer: `{"text": "...", "citations": [{"file_id","start_index","end_index"}]}`. */
export function parseAnswer(text: string): AgentResult {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new AgentFailure('agent_invalid_output', 'The agent service did not answer JSON.');
  }
  const answer = body as { text?: unknown; citations?: unknown };
  if (!answer || typeof answer !== 'object' || typeof answer.text !== 'string')
    throw new AgentFailure('agent_invalid_output', 'The agent service answer has no "text" string.');
  const raw = answer.citations ?? [];
  if (!Array.isArray(raw)) throw new AgentFailure('agent_invalid_output', '"citations" must be an array.');
  const citations = raw.map((c, i): AgentCitation => {
    const item = c as { file_id?: unknown; start_index?: unknown; end_index?: unknown } | null;
    if (
      !item ||
      typeof item.file_id !== 'string' ||
      !Number.isInteger(item.start_index) ||
      !Number.isInteger(item.end_index)
    ) {
      throw new AgentFailure(
        'agent_invalid_output',
        `citations[${i}] must be {"file_id": string, "start_index": integer, "end_index": integer}.`,
      );
    }
    return { fileId: item.file_id, startIndex: item.start_index as number, endIndex: item.end_index as number };
  });
  return { text: answer.text, citations };
}

/**
 * Forwards the task to the operator's agent service (docs/api.md §4). The service reads the input files and
 * uploads its artifacts through the public API with the task token, then answers text and citations.
 */
/** The network error's code (ECONNREFUSED …) when fetch has one, else its message. */
const causeOf = (error: unknown) =>
  (error as Error & { cause?: { code?: string } }).cause?.code ?? (error as Error).message;

export class HttpAgent implements Agent {
  readonly name = 'http';

  constructor(private readonly options: HttpAgentOptions) {}

  unavailableReason(): string | null {
    return this.options.url ? null : 'agent "http" is not configured on this server (AGENT_HTTP_URL is unset)';
  }

  async run(task: AgentTask): Promise<AgentResult> {
    const url = this.options.url;
    if (!url) throw new AgentFailure('agent_unreachable', this.unavailableReason()!);
    const requestId = this.options.requestId();
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
          ...(requestId ? { 'x-request-id': requestId } : {}),
        },
        body: JSON.stringify(taskPayload(task, this.options.callbackBaseUrl)),
        signal: task.signal,
        redirect: 'error',
      });
    } catch (error) {
      if (task.signal.aborted)
        throw new AgentFailure('agent_timeout', 'The agent service did not answer before the deadline.');
      throw new AgentFailure('agent_unreachable', `The agent service could not be reached (${causeOf(error)}).`);
    }
    let text: string;
    try {
      text = await readCapped(res);
    } catch (error) {
      if (error instanceof AgentFailure) throw error;
      if (task.signal.aborted)
        throw new AgentFailure('agent_timeout', 'The agent service did not finish its answer before the deadline.');
      throw new AgentFailure('agent_unreachable', 'The agent service broke off its answer.');
    }
    if (res.status < 200 || res.status > 299)
      throw new AgentFailure('agent_error', `The agent service answered ${res.status}: ${text.slice(0, 200)}`);
    return parseAnswer(text);
  }
}
