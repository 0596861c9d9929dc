import { Controller, Get, Inject, Param, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { PrincipalId } from '../auth/auth';
import { ResponseWriter } from '../http/response-writer';
import { Concurrency } from '../limits/concurrency-limits';
import { PreviewsService } from './previews.service';

/** PDF previews: 501 when off or not installed, 502 when a file will not convert. */
@Controller('v1/containers/:cid/files/:fid/pdf')
export class PreviewsController {
  constructor(
    @Inject(PreviewsService) private readonly previews: PreviewsService,
    @Inject(ResponseWriter) private readonly writer: ResponseWriter,
  ) {}

  @Get()
  @Concurrency('downloads')
  async preview(
    @PrincipalId() principalId: string,
    @Param('cid') cid: string,
    @Param('fid') fid: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await this.writer.download(req, res, await this.previews.preview(principalId, cid, fid, () => req.destroyed));
  }
}
