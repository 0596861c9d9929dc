import { Inject, Injectable } from '@nestjs/common';
import { Readable } from 'node:stream';
import { ApiError, APP_CONFIG, LOGGER, StorageClient, type AppLogger, type GatewayConfig } from '@app/common';
import { isId, newId } from '@app/contracts';
import {
  ContainerFileRepository,
  FileRepository,
  PrismaService,
  ResponseRepository,
  SessionRepository,
  StoredObjectRepository,
  type FileRow,
  type ResponseRow,
  type Tx,
} from '@app/db';
import { AgentRegistry } from '../agents/agent-registry';
import { AgentFailure, type Agent, type AgentInputFile, type AgentResult, type AgentTask } from '../agents/agent.port';
import { generateTaskToken, hashApiKey } from '../auth/api-key';
import { ArtifactWriter } from '../containers/artifact-writer.service';
import { ObjectKeeper } from '../uploads/object-keeper.service';
import { ObjectWriter, type WrittenObject } from '../uploads/object-writer.service';
import { checkCitations, MAX_CITATIONS } from './citations';
import { parseResponseRequest, type InputPart, type ResponseRequest } from './response-request';
import { ResponseMetrics } from './response-metrics';

type InlinePart = Extract<InputPart, { kind: 'inline' }>;

interface StartedResponse {
  response: ResponseRow;
  files: FileRow[];
}

/**
 * POST /v1/responses (PROFILE §4). The request is checked whole and every id resolved before
 * anything is written; then inline inputs are stored as files, the session (when new) and the
 * response row are created in one transaction, the agent runs with a task token scoped to the
 * container, and the response ends completed or failed — always with an `output` array.
 */
@Injectable()
export class ResponsesService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(SessionRepository) private readonly sessions: SessionRepository,
    @Inject(FileRepository) private readonly files: FileRepository,
    @Inject(ContainerFileRepository) private readonly containerFiles: ContainerFileRepository,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(ResponseRepository) private readonly responses: ResponseRepository,
    @Inject(ObjectWriter) private readonly writer: ObjectWriter,
    @Inject(ObjectKeeper) private readonly keeper: ObjectKeeper,
    @Inject(ArtifactWriter) private readonly artifacts: ArtifactWriter,
    @Inject(StorageClient) private readonly storage: StorageClient,
    @Inject(AgentRegistry) private readonly agents: AgentRegistry,
    @Inject(ResponseMetrics) private readonly metrics: ResponseMetrics,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async create(principalId: string, body: unknown): Promise<ResponseRow> {
    const request = parseResponseRequest(body, {
      maxInlineFileBytes: this.config.UHP_MAX_INLINE_FILE_BYTES,
      maxInputFiles: this.config.UHP_MAX_INPUT_FILES,
      agentNames: this.agents.names,
    });
    const agent = this.agents.pick(request.agent);
    await this.checkReferences(principalId, request);

    const stored = await this.storeInline(principalId, request.parts.filter((part): part is InlinePart => part.kind === 'inline'));
    const taskToken = generateTaskToken();
    const deadline = new Date(Date.now() + this.config.AGENT_TIMEOUT_MS);
    let started: StartedResponse;
    try {
      started = await this.prisma.$transaction((tx) => this.start(tx, principalId, request, agent.name, stored, hashApiKey(taskToken), deadline));
    } catch (error) {
      await Promise.all(stored.map((written) => this.keeper.discard(written.object)));
      throw error;
    }
    return this.run(principalId, agent, request, started, taskToken, deadline);
  }

  async get(principalId: string, id: string): Promise<ResponseRow> {
    const response = isId('response', id) ? await this.responses.findForOwner(principalId, id) : null;
    if (!response) throw ApiError.notFound('response');
    return response;
  }

  /** Reads only: the session and every file_id must be the caller's, else 404 naming the field. */
  private async checkReferences(principalId: string, request: ResponseRequest): Promise<void> {
    if (request.sessionId !== null && !(isId('session', request.sessionId) && (await this.sessions.findForOwner(principalId, request.sessionId)))) {
      throw ApiError.notFound('session', 'session_id');
    }
    for (const part of request.parts) {
      if (part.kind === 'file_id' && !(isId('file', part.fileId) && (await this.files.findForOwner(principalId, part.fileId)))) throw ApiError.notFound('file', part.param);
    }
  }

  /** Streams each inline file into the bucket; if one fails, those already stored are discarded. */
  private async storeInline(principalId: string, parts: InlinePart[]): Promise<WrittenObject[]> {
    const stored: WrittenObject[] = [];
    try {
      for (const part of parts) stored.push(await this.writer.write(principalId, Readable.from([part.bytes]), part.contentType));
      return stored;
    } catch (error) {
      await Promise.all(stored.map((written) => this.keeper.discard(written.object)));
      if (error instanceof ApiError && error.code === 'file_too_large') throw new ApiError('file_too_large', error.message, parts[stored.length]?.param ?? null);
      throw error;
    }
  }

  private async start(tx: Tx, principalId: string, request: ResponseRequest, agent: string, stored: WrittenObject[], taskTokenHash: string, deadline: Date): Promise<StartedResponse> {
    const createdAt = new Date();
    const inputs: FileRow[] = [];
    let inlineIndex = 0;
    for (const part of request.parts) {
      if (part.kind === 'inline') {
        const { object, receipt } = stored[inlineIndex++];
        await this.objects.markReady(tx, principalId, object.id, receipt.bytes, receipt.sha256);
        inputs.push(
          await this.files.create(tx, principalId, {
            id: newId('file'),
            objectId: object.id,
            filename: part.filename,
            bytes: receipt.bytes,
            contentType: part.contentType,
            sha256: receipt.sha256,
            purpose: 'user_data',
            createdAt,
            expiresAt: null,
          }),
        );
      } else if (part.kind === 'file_id') {
        // Deleted since it was checked: the same 404 as before any side effect (the transaction rolls back).
        const file = await this.files.findForOwner(principalId, part.fileId, tx);
        if (!file) throw ApiError.notFound('file', part.param);
        inputs.push(file);
      }
    }
    const session = request.sessionId
      ? await this.sessions.findForOwner(principalId, request.sessionId, tx)
      : (await this.sessions.create(tx, principalId, { sessionId: newId('session'), containerId: newId('container') }, {}, null)).session;
    if (!session?.currentContainerId) throw ApiError.notFound('session', 'session_id');
    const files = [...new Map(inputs.map((file) => [file.id, file])).values()];
    const response = await this.responses.create(tx, principalId, {
      id: newId('response'),
      sessionId: session.id,
      containerId: session.currentContainerId,
      agent,
      inputFileIds: files.map((file) => file.id),
      metadata: request.metadata,
      taskTokenHash,
      deadlineAt: deadline,
      createdAt,
    });
    return { response, files };
  }

  private async run(principalId: string, agent: Agent, request: ResponseRequest, started: StartedResponse, taskToken: string, deadline: Date): Promise<ResponseRow> {
    const { response } = started;
    const timer = this.metrics.start(agent.name);
    const signal = AbortSignal.timeout(Math.max(1, deadline.getTime() - Date.now()));
    const task: AgentTask = {
      responseId: response.id,
      sessionId: response.sessionId,
      containerId: response.containerId,
      instructions: request.instructions,
      messages: request.parts.flatMap((part) => (part.kind === 'text' ? [{ role: part.role, text: part.text }] : [])),
      files: started.files.map((file) => this.inputFile(file)),
      artifacts: {
        write: (file) => this.artifacts.write(principalId, response.containerId, { source: 'assistant', responseId: response.id }, file),
      },
      taskToken,
      deadline,
      signal,
    };
    let finished: ResponseRow | null;
    try {
      const result = await this.untilDeadline(agent.run(task), signal);
      const citations = checkCitations(result.text, result.citations, await this.citedFilenames(principalId, response.containerId, result));
      finished = await this.responses.finish(principalId, response.id, { status: 'completed', output: { message_id: newId('message'), text: result.text, citations } });
    } catch (error) {
      const failure = this.asFailure(error, response.id);
      finished = await this.responses.finish(principalId, response.id, { status: 'failed', error: { code: failure.code, message: failure.message } });
    }
    const outcome = finished ?? (await this.responses.findForOwner(principalId, response.id));
    if (!outcome) throw ApiError.notFound('session', 'session_id');
    timer(outcome.status);
    this.logger.info({ responseId: response.id, sessionId: response.sessionId, agent: agent.name, status: outcome.status, error: outcome.error?.code, inputFiles: started.files.length }, 'response finished');
    return outcome;
  }

  private inputFile(file: FileRow): AgentInputFile {
    return {
      id: file.id,
      filename: file.filename,
      bytes: Number(file.bytes),
      contentType: file.contentType,
      sha256: file.sha256,
      open: async () => (await this.storage.getObject(file.storageKey)).body,
    };
  }

  /** An agent that ignores its signal still cannot hold the request past the deadline. */
  private untilDeadline(run: Promise<AgentResult>, signal: AbortSignal): Promise<AgentResult> {
    return new Promise<AgentResult>((resolve, reject) => {
      const onAbort = () => reject(new AgentFailure('agent_timeout', `The agent did not finish within ${this.config.AGENT_TIMEOUT_MS} ms.`));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      run.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  private async citedFilenames(principalId: string, containerId: string, result: AgentResult): Promise<Map<string, string>> {
    const ids = [...new Set(result.citations.map((citation) => citation.fileId))].filter((id) => isId('file', id));
    return this.containerFiles.filenamesInContainer(principalId, containerId, ids.slice(0, MAX_CITATIONS));
  }

  private asFailure(error: unknown, responseId: string): AgentFailure {
    if (error instanceof AgentFailure) return error;
    if (error instanceof ApiError) return new AgentFailure('agent_error', error.message);
    this.logger.error({ err: error, responseId }, 'agent run failed unexpectedly');
    return new AgentFailure('agent_error', 'The agent failed.');
  }
}
