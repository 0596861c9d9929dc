import type { Prisma, ResponseStatus } from '../generated/client';
import type { Db } from '../prisma.service';

export interface ResponseCitation {
  file_id: string;
  filename: string;
  start_index: number;
  end_index: number;
}

export interface ResponseOutput {
  message_id: string;
  text: string;
  citations: ResponseCitation[];
}

export interface ResponseError {
  code: string;
  message: string;
}

export interface ResponseRow {
  id: string;
  sessionId: string;
  containerId: string;
  agent: string;
  status: ResponseStatus;
  inputFileIds: string[];
  metadata: Prisma.JsonValue;
  output: ResponseOutput | null;
  error: ResponseError | null;
  createdAt: Date;
  completedAt: Date | null;
}

/** What a task token lets an agent reach: one container, this response's input files, until the deadline. */
export interface TaskScope {
  principalId: string;
  responseId: string;
  sessionId: string;
  containerId: string;
  inputFileIds: string[];
}

const SELECT = {
  id: true,
  sessionId: true,
  containerId: true,
  agent: true,
  status: true,
  inputFileIds: true,
  metadata: true,
  output: true,
  error: true,
  createdAt: true,
  completedAt: true,
} as const;

type Selected = Prisma.ResponseGetPayload<{ select: typeof SELECT }>;
const toRow = (row: Selected): ResponseRow => ({
  ...row,
  output: row.output as ResponseOutput | null,
  error: row.error as ResponseError | null,
});

export interface NewResponse {
  id: string;
  sessionId: string;
  containerId: string;
  agent: string;
  inputFileIds: string[];
  metadata: Prisma.InputJsonObject;
  taskTokenHash: string | null;
  deadlineAt: Date;
  createdAt: Date;
}

/** Responses (tasks). Reachable only while their session is live; every query takes the principal. */
export class ResponseRepository {
  constructor(private readonly db: Db) {}

  async create(principalId: string, response: NewResponse): Promise<ResponseRow> {
    return toRow(
      await this.db.response.create({ data: { ...response, principalId, status: 'in_progress' }, select: SELECT }),
    );
  }

  async findForOwner(principalId: string, id: string): Promise<ResponseRow | null> {
    const row = await this.db.response.findFirst({
      where: { id, principalId, session: { deletedAt: null } },
      select: SELECT,
    });
    return row ? toRow(row) : null;
  }

  /**
   * Ends a response that is still in progress: its task token dies with it. Returns null when it had
   * already ended (the sweeper marked it interrupted) or its session was deleted meanwhile.
   */
  async finish(
    principalId: string,
    id: string,
    result: { status: 'completed'; output: ResponseOutput } | { status: 'failed'; error: ResponseError },
  ): Promise<ResponseRow | null> {
    const json = (value: object) => value as unknown as Prisma.InputJsonObject;
    const data =
      result.status === 'completed'
        ? { status: result.status, output: json(result.output) }
        : { status: result.status, error: json(result.error) };
    const { count } = await this.db.response.updateMany({
      where: { id, principalId, status: 'in_progress' },
      data: { ...data, taskTokenHash: null, completedAt: new Date() },
    });
    return count === 1 ? this.findForOwner(principalId, id) : null;
  }

  /** The scope of a live task token: its response is in progress, before its deadline, in a live container. */
  async findTaskScope(tokenHash: string, now = new Date()): Promise<TaskScope | null> {
    const row = await this.db.response.findFirst({
      where: {
        taskTokenHash: tokenHash,
        status: 'in_progress',
        deadlineAt: { gt: now },
        session: { deletedAt: null },
        container: { deletedAt: null },
      },
      select: { id: true, principalId: true, sessionId: true, containerId: true, inputFileIds: true },
    });
    return row
      ? {
          principalId: row.principalId,
          responseId: row.id,
          sessionId: row.sessionId,
          containerId: row.containerId,
          inputFileIds: row.inputFileIds,
        }
      : null;
  }

  /** Responses still in progress long after their deadline: the gateway running them died. */
  async failOverdue(before: Date, error: ResponseError): Promise<number> {
    const { count } = await this.db.response.updateMany({
      where: { status: 'in_progress', deadlineAt: { lt: before } },
      data: { status: 'failed', error: { ...error }, taskTokenHash: null, completedAt: new Date() },
    });
    return count;
  }
}
