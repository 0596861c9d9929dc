import type { Readable } from 'node:stream';

/** An input file of a task, as the agent sees it: its facts and its bytes on demand. */
export interface AgentInputFile {
  id: string;
  filename: string;
  bytes: number;
  contentType: string;
  /** Null while the file is "uploaded" (not hashed yet). */
  sha256: string | null;
  /** Opens the bytes as a stream; the caller must consume or destroy it. */
  open(): Promise<Readable>;
}

export interface AgentMessage {
  role: string;
  text: string;
}

/** Writes artifacts into the task's container: they get `source: "assistant"` and the response id. */
export interface ArtifactSink {
  write(file: { filename: string; contentType: string; body: Readable }): Promise<{ id: string; filename: string }>;
}

/** The resolved task handed to an agent. */
export interface AgentTask {
  responseId: string;
  sessionId: string;
  containerId: string;
  instructions: string | null;
  /** Every text part of the input, in order, with its role. */
  messages: AgentMessage[];
  files: AgentInputFile[];
  artifacts: ArtifactSink;
  /** A token the agent may hand to an out-of-process worker: this container and these input files only. */
  taskToken: string;
  deadline: Date;
  signal: AbortSignal;
}

export interface AgentCitation {
  fileId: string;
  startIndex: number;
  endIndex: number;
}

export interface AgentResult {
  text: string;
  citations: AgentCitation[];
}

/** Why an agent run failed, as the failed response reports it (`error.code`, `error.message`). */
export class AgentFailure extends Error {
  constructor(
    readonly code: 'agent_unreachable' | 'agent_timeout' | 'agent_error' | 'agent_invalid_output',
    message: string,
  ) {
    super(message);
    this.name = 'AgentFailure';
  }
}

/** The port every agent adapter implements. */
export interface Agent {
  readonly name: string;
  /** Null when the agent can run here; else why not (e.g. its service is not configured). */
  unavailableReason(): string | null;
  run(task: AgentTask): Promise<AgentResult>;
}

export const AGENTS = Symbol('AGENTS');
