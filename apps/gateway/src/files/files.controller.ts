import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import type { Request, Response } from 'express';
import { type Caller, CallerOf, PrincipalId, TaskScoped } from '../auth/auth';
import { checkInputFileScope } from '../auth/task-scope';
import { listBody, parseListQuery, singleQueryValue } from '../http/list-query';
import { presentFile } from '../http/presenters';
import { ResponseWriter } from '../http/response-writer';
import { uploadBodyOf, UploadLengthGuard } from '../http/upload-body';
import { toPurpose } from './file-fields';
import { Concurrency } from '../limits/concurrency-limits';
import { FilesService } from './files.service';

@Controller('v1/files')
export class FilesController {
  constructor(
    @Inject(FilesService) private readonly files: FilesService,
    @Inject(ResponseWriter) private readonly writer: ResponseWriter,
  ) {}

  @Post()
  @HttpCode(200)
  @UseGuards(UploadLengthGuard)
  @Concurrency('uploads')
  async upload(@PrincipalId() principalId: string, @Req() req: Request) {
    return presentFile(await this.files.upload(principalId, uploadBodyOf(req)));
  }

  @Get()
  async list(@PrincipalId() principalId: string, @Query() query: Record<string, unknown>) {
    const purpose = singleQueryValue(query, 'purpose');
    const page = await this.files.list(principalId, {
      ...parseListQuery(query),
      purpose: purpose === undefined ? undefined : toPurpose(purpose),
    });
    return listBody(page.items.map(presentFile), page.hasMore);
  }

  @Get(':id')
  @TaskScoped()
  async get(@CallerOf() caller: Caller, @Param('id') id: string) {
    checkInputFileScope(caller, id);
    return presentFile(await this.files.get(caller.principalId, id));
  }

  @Get(':id/content')
  @TaskScoped()
  @Concurrency('downloads')
  async content(@CallerOf() caller: Caller, @Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    checkInputFileScope(caller, id);
    await this.writer.download(req, res, await this.files.download(caller.principalId, id));
  }

  @Delete(':id')
  async delete(@PrincipalId() principalId: string, @Param('id') id: string) {
    await this.files.delete(principalId, id);
    return { id, object: 'file', deleted: true };
  }
}
