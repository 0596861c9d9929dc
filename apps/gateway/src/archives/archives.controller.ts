import { Controller, Get, Inject, Param, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { PrincipalId } from '../auth/auth';
import { presentArchiveProgress } from '../http/presenters';
import { ResponseWriter } from '../http/response-writer';
import { Concurrency } from '../limits/concurrency-limits';
import { ARCHIVE_RETRY_AFTER_SECONDS, ArchivesService } from './archives.service';

@Controller('v1/sessions/:id/files/archive')
export class ArchivesController {
  constructor(
    @Inject(ArchivesService) private readonly archives: ArchivesService,
    @Inject(ResponseWriter) private readonly writer: ResponseWriter,
  ) {}

  /** The ZIP when it is ready; else 202 with the build's progress and Retry-After. */
  @Get()
  @Concurrency('downloads')
  async archive(
    @PrincipalId() principalId: string,
    @Param('id') id: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const answer = await this.archives.archive(principalId, id, () => req.destroyed);
    if (answer.kind === 'ready') return this.writer.download(req, res, answer.download);
    res
      .status(202)
      .setHeader('retry-after', String(ARCHIVE_RETRY_AFTER_SECONDS))
      .setHeader('cache-control', 'no-store')
      .json(presentArchiveProgress(answer.archive));
  }
}
