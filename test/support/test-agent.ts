import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** The task body the gateway POSTs to AGENT_HTTP_URL (docs/agents.md). */
export interface AgentTaskBody {
  object: 'agent.task';
  response_id: string;
  session_id: string;
  container_id: string;
  instructions: string | null;
  input: { role: string; text: string }[];
  files: { id: string; filename: string; bytes: number; content_type: string; sha256: string; download_url: string }[];
  api: { base_url: string; token: string; expires_at: number; container_files_url: string };
}

export type AgentBehaviour = (
  task: AgentTaskBody,
  headers: IncomingMessage['headers'],
) => Promise<{ status?: number; body: unknown } | 'hang'>;

/**
 * A small agent service written for the tests: the gateway's `http` agent posts tasks to it, and each
 * test sets what it does with them (read inputs and upload artifacts with the task token, fail, hang).
 */
export class TestAgentService {
  private server: Server | null = null;
  private behaviour: AgentBehaviour = async () => ({ body: { text: 'idle' } });
  readonly tasks: AgentTaskBody[] = [];
  private readonly hanging = new Set<ServerResponse>();

  constructor(readonly port: number) {}

  behave(behaviour: AgentBehaviour): void {
    this.behaviour = behaviour;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const task = JSON.parse(Buffer.concat(chunks).toString('utf8')) as AgentTaskBody;
    this.tasks.push(task);
    try {
      const answer = await this.behaviour(task, req.headers);
      if (answer === 'hang') {
        this.hanging.add(res);
        return;
      }
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json' });
      res.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
    } catch (error) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: String(error) }));
    }
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    this.server = null;
  }
}

/** A call the agent makes back into the gateway with its task token. */
export async function callWithToken(task: AgentTaskBody, url: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { ...init, headers: { ...(init.headers ?? {}), authorization: `Bearer ${task.api.token}` } });
}
