import { Inject, Injectable } from '@nestjs/common';
import { Readable } from 'node:stream';
import { ApiError, APP_CONFIG, type GatewayConfig } from '@app/common';
import { effectiveLimitsOf } from '../limits/effective-limits';
import { isId } from '@app/contracts';
import { FileRepository, SessionRepository } from '@app/db';
import { ObjectStager, type StagedObject } from '@app/lifecycle';
import type { InputPart, ResponseRequest } from './response-request';

export type InlinePart = Extract<InputPart, { kind: 'inline' }>;

/** The inputs of a response before it starts: references checked, inline bytes staged. */
@Injectable()
export class ResponseInputs {
  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(SessionRepository) private readonly sessions: SessionRepository,
    @Inject(FileRepository) private readonly files: FileRepository,
    @Inject(ObjectStager) private readonly stager: ObjectStager,
  ) {}

  /** Reads only: the session and every file_id must be the caller's, else 404 naming the field. */
  async checkReferences(principalId: string, request: ResponseRequest): Promise<void> {
    if (
      request.sessionId !== null &&
      !(isId('session', request.sessionId) && (await this.sessions.findForOwner(principalId, request.sessionId)))
    ) {
      throw ApiError.notFound('session', 'session_id');
    }
    for (const part of request.parts) {
      if (
        part.kind === 'file_id' &&
        !(isId('file', part.fileId) && (await this.files.findForOwner(principalId, part.fileId)))
      )
        throw ApiError.notFound('file', part.param);
    }
  }

  /** Streams each inline file into a staged object, in order; if one fails, those already staged are discarded. */
  async stageInline(principalId: string, request: ResponseRequest): Promise<StagedObject[]> {
    const parts = request.parts.filter((part): part is InlinePart => part.kind === 'inline');
    const staged: StagedObject[] = [];
    try {
      for (const part of parts)
        staged.push(
          await this.stager.stage(principalId, Readable.from([part.bytes]), {
            maxBytes: effectiveLimitsOf(this.config).maxInlineFileBytes,
            contentType: part.contentType,
          }),
        );
      return staged;
    } catch (error) {
      await this.stager.discard(staged);
      if (error instanceof ApiError && error.code === 'file_too_large')
        throw new ApiError('file_too_large', error.message, parts[staged.length]?.param ?? null);
      throw error;
    }
  }
}
