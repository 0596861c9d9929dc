import { Inject, Injectable } from '@nestjs/common';
import { ApiError, LOGGER, ObjectStore, type AppLogger } from '@app/common';
import { isId, newId } from '@app/contracts';
import { ContainerFileRepository, ResponseRepository, type FileRow, type ResponseRow } from '@app/db';
import { AgentFailure, type Agent, type AgentInputFile, type AgentResult, type AgentTask } from '../agents/agent.port';
import { ArtifactWriter } from '../containers/artifact-writer.service';
import { checkCitations, MAX_CITATIONS } from './citations';
import { ResponseMetrics } from './response-metrics';
import type { ResponseRequest } from './response-request';

/** A response whose row is in progress, with what its agent needs. */
export interface StartedRun {
  principalId: string;
  response: ResponseRow;
  request: ResponseRequest;
  inputs: FileRow[];
  taskToken: string;
  deadline: Date;
  /** The agent's time limit, for the failure message. */
  timeoutMs: number;
}

/**
 * Runs a started response's agent until its deadline and ends the response: completed with checked
 * citations, or failed with an error code — `output` is always an array either way.
 */
@Injectable()
export class AgentRunner {
  constructor(
    @Inject(ArtifactWriter) private readonly artifacts: ArtifactWriter,
    @Inject(ObjectStore) private readonly store: ObjectStore,
    @Inject(ContainerFileRepository) private readonly containerFiles: ContainerFileRepository,
    @Inject(ResponseRepository) private readonly responses: ResponseRepository,
    @Inject(ResponseMetrics) private readonly metrics: ResponseMetrics,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async run(agent: Agent, started: StartedRun): Promise<ResponseRow> {
    const { principalId, response, request, deadline } = started;
    const timer = this.metrics.start(agent.name);
    const signal = AbortSignal.timeout(Math.max(1, deadline.getTime() - Date.now()));
    const task: AgentTask = {
      responseId: response.id,
      sessionId: response.sessionId,
      containerId: response.containerId,
      instructions: request.instructions,
      messages: request.parts.flatMap((part) => (part.kind === 'text' ? [{ role: part.role, text: part.text }] : [])),
      files: started.inputs.map((file) => this.inputFile(file)),
      artifacts: {
        write: (file) =>
          this.artifacts.write(
            principalId,
            response.containerId,
            { source: 'assistant', responseId: response.id },
            file,
          ),
      },
      taskToken: started.taskToken,
      deadline,
      signal,
    };
    let finished: ResponseRow | null;
    try {
      const result = await untilDeadline(agent.run(task), signal, started.timeoutMs);
      const citations = checkCitations(
        result.text,
        result.citations,
        await this.citedFilenames(principalId, response.containerId, result),
      );
      finished = await this.responses.finish(principalId, response.id, {
        status: 'completed',
        output: { message_id: newId('message'), text: result.text, citations },
      });
    } catch (error) {
      const failure = this.asFailure(error, response.id);
      finished = await this.responses.finish(principalId, response.id, {
        status: 'failed',
        error: { code: failure.code, message: failure.message },
      });
    }
    // Ended already (its session was deleted meanwhile, or the sweep marked it interrupted): answer as it is.
    const outcome = finished ?? (await this.responses.findForOwner(principalId, response.id));
    if (!outcome) throw ApiError.notFound('response');
    timer(outcome.status);
    this.logger.info(
      {
        responseId: response.id,
        sessionId: response.sessionId,
        agent: agent.name,
        status: outcome.status,
        error: outcome.error?.code,
        inputFiles: started.inputs.length,
      },
      'response finished',
    );
    return outcome;
  }

  private inputFile(file: FileRow): AgentInputFile {
    return {
      id: file.id,
      filename: file.filename,
      bytes: Number(file.bytes),
      contentType: file.contentType,
      sha256: file.sha256,
      open: async () => (await this.store.get(file.storageKey)).body,
    };
  }

  private async citedFilenames(
    principalId: string,
    containerId: string,
    result: AgentResult,
  ): Promise<Map<string, string>> {
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

/** An agent that ignores its signal still cannot hold the request past the deadline. */
function untilDeadline(run: Promise<AgentResult>, signal: AbortSignal, timeoutMs: number): Promise<AgentResult> {
  return new Promise<AgentResult>((resolve, reject) => {
    const onAbort = () => reject(new AgentFailure('agent_timeout', `The agent did not finish within ${timeoutMs} ms.`));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    run.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
