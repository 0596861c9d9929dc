import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { type Caller, CallerOf, PrincipalId, TaskScoped } from '../auth/auth';
import { checkInputFileScope } from '../auth/task-scope';
import { listBody, parseListQuery } from '../http/list-query';
import { presentFile } from '../http/presenters';
import { FilesService } from './files.service';

@Controller('v1/files')
export class FilesController {
  constructor(@Inject(FilesService) private readonly files: FilesService) {}

  @Post()
  @HttpCode(200)
  async upload(@PrincipalId() principalId: string, @Req() req: Request) {
    return presentFile(await this.files.upload(req, principalId));
  }

  @Get()
  async list(@PrincipalId() principalId: string, @Query() query: Record<string, unknown>) {
    const page = await this.files.list(principalId, parseListQuery(query), typeof query.purpose === 'string' ? query.purpose : undefined);
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
  async content(@CallerOf() caller: Caller, @Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    checkInputFileScope(caller, id);
    await this.files.download(req, res, caller.principalId, id);
  }

  @Delete(':id')
  async delete(@PrincipalId() principalId: string, @Param('id') id: string) {
    await this.files.delete(principalId, id);
    return { id, object: 'file', deleted: true };
  }
}
