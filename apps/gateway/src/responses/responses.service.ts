import { Inject, Injectable } from '@nestjs/common';
import { ApiError, APP_CONFIG, type GatewayConfig } from '@app/common';
import { effectiveLimitsOf } from '../limits/effective-limits';
import { isId, newId } from '@app/contracts';
import { ResponseRepository, type FileRow, type ResponseRow, type SessionRow } from '@app/db';
import { UnitOfWork, type StagedObject, type Work } from '@app/lifecycle';
import { AgentRegistry } from '../agents/agent-registry';
import { generateTaskToken, hashApiKey } from '../auth/api-key';
import { createSession } from '../sessions/new-session';
import { AgentRunner } from './agent-runner.service';
import { ResponseInputs } from './response-inputs.service';
import { parseResponseRequest, type ResponseRequest } from './response-request';

/**
 * POST /v1/responses. The request is checked whole and every id resolved before anything is written;
 * then inline inputs are staged, and one unit of work keeps them as files, creates the session when
 * none was given and the response row; the agent runs with a task token scoped to the container, and
 * the response ends completed or failed — always with an `output` array.
 */
@Injectable()
export class ResponsesService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(ResponseRepository) private readonly responses: ResponseRepository,
    @Inject(ResponseInputs) private readonly inputs: ResponseInputs,
    @Inject(AgentRegistry) private readonly agents: AgentRegistry,
    @Inject(AgentRunner) private readonly runner: AgentRunner,
  ) {}

  async create(principalId: string, body: unknown): Promise<ResponseRow> {
    const request = parseResponseRequest(body, {
      maxInlineFileBytes: effectiveLimitsOf(this.config).maxInlineFileBytes,
      maxInputFiles: this.config.UHP_MAX_INPUT_FILES,
      agentNames: this.agents.names,
    });
    const agent = this.agents.pick(request.agent);
    await this.inputs.checkReferences(principalId, request);
    const staged = await this.inputs.stageInline(principalId, request);
    const taskToken = generateTaskToken();
    const deadline = new Date(Date.now() + this.config.AGENT_TIMEOUT_MS);
    const { response, inputs } = await this.uow.run(
      (work) => this.start(work, principalId, request, agent.name, staged, hashApiKey(taskToken), deadline),
      { staged },
    );
    return this.runner.run(agent, {
      principalId,
      response,
      request,
      inputs,
      taskToken,
      deadline,
      timeoutMs: this.config.AGENT_TIMEOUT_MS,
    });
  }

  async get(principalId: string, id: string): Promise<ResponseRow> {
    const response = isId('response', id) ? await this.responses.findForOwner(principalId, id) : null;
    if (!response) throw ApiError.notFound('response');
    return response;
  }

  private async start(
    work: Work,
    principalId: string,
    request: ResponseRequest,
    agent: string,
    staged: StagedObject[],
    taskTokenHash: string,
    deadline: Date,
  ): Promise<{ response: ResponseRow; inputs: FileRow[] }> {
    const createdAt = new Date();
    const session = await this.sessionFor(work, principalId, request.sessionId);
    const inputs: FileRow[] = [];
    let inlineIndex = 0;
    for (const part of request.parts) {
      if (part.kind === 'inline') {
        const object = staged[inlineIndex++];
        await work.adopt(object);
        inputs.push(
          await work.files.create(principalId, {
            id: newId('file'),
            objectId: object.id,
            filename: part.filename,
            bytes: object.bytes,
            contentType: part.contentType,
            sha256: object.sha256,
            purpose: 'user_data',
            createdAt,
            expiresAt: null,
          }),
        );
      } else if (part.kind === 'file_id') {
        // Deleted since it was checked: the same 404 as before any side effect (the work rolls back).
        const file = await work.files.findForOwner(principalId, part.fileId);
        if (!file) throw ApiError.notFound('file', part.param);
        inputs.push(file);
      }
    }
    const unique = [...new Map(inputs.map((file) => [file.id, file])).values()];
    const response = await work.responses.create(principalId, {
      id: newId('response'),
      sessionId: session.id,
      containerId: session.currentContainerId!,
      agent,
      inputFileIds: unique.map((file) => file.id),
      metadata: request.metadata,
      taskTokenHash,
      deadlineAt: deadline,
      createdAt,
    });
    return { response, inputs: unique };
  }

  /** The given session, held (shared) so it cannot be deleted under the new response; or a new one. */
  private async sessionFor(work: Work, principalId: string, sessionId: string | null): Promise<SessionRow> {
    if (sessionId === null) return (await createSession(work, principalId)).session;
    const session = await work.sessions.lockLive(principalId, sessionId, 'share');
    if (!session?.currentContainerId) throw ApiError.notFound('session', 'session_id');
    return session;
  }
}
