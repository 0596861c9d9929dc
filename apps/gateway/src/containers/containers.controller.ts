import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { type Caller, CallerOf, PrincipalId, TaskScoped } from '../auth/auth';
import { checkContainerScope, checkInputFileScope, originOf } from '../auth/task-scope';
import { listBody, parseListQuery } from '../http/list-query';
import { presentContainer, presentContainerFile } from '../http/presenters';
import { ResponseWriter } from '../http/response-writer';
import { isMultipart, uploadBodyOf, UploadLengthGuard } from '../http/upload-body';
import { bodyObject } from '../sessions/metadata';
import { Concurrency } from '../limits/concurrency-limits';
import { ContainerFilesService } from './container-files.service';
import { ContainersService } from './containers.service';
import { JsonBody } from '../http/json-body.decorator';

@Controller('v1/containers')
export class ContainersController {
  constructor(
    @Inject(ContainersService) private readonly containers: ContainersService,
    @Inject(ContainerFilesService) private readonly containerFiles: ContainerFilesService,
    @Inject(ResponseWriter) private readonly writer: ResponseWriter,
  ) {}

  @Post()
  @JsonBody()
  @HttpCode(200)
  async create(@PrincipalId() principalId: string, @Body() body: unknown) {
    return presentContainer(await this.containers.create(principalId, bodyObject(body)));
  }

  @Get()
  async list(@PrincipalId() principalId: string, @Query() query: Record<string, unknown>) {
    const page = await this.containers.list(principalId, parseListQuery(query));
    return listBody(page.items.map(presentContainer), page.hasMore);
  }

  @Get(':cid')
  async get(@PrincipalId() principalId: string, @Param('cid') cid: string) {
    return presentContainer(await this.containers.get(principalId, cid));
  }

  @Delete(':cid')
  async delete(@PrincipalId() principalId: string, @Param('cid') cid: string) {
    await this.containers.delete(principalId, cid);
    return { id: cid, object: 'container.deleted', deleted: true };
  }

  @Post(':cid/files')
  @JsonBody()
  @HttpCode(200)
  @TaskScoped()
  @UseGuards(UploadLengthGuard)
  @Concurrency('uploads')
  async addFile(@CallerOf() caller: Caller, @Param('cid') cid: string, @Req() req: Request, @Body() body: unknown) {
    checkContainerScope(caller, cid);
    if (isMultipart(req))
      return presentContainerFile(
        await this.containerFiles.upload(caller.principalId, cid, uploadBodyOf(req), originOf(caller)),
      );
    const fields = bodyObject(body);
    checkInputFileScope(caller, fields.file_id, 'file_id');
    return presentContainerFile(await this.containerFiles.copy(caller.principalId, cid, fields, originOf(caller)));
  }

  @Get(':cid/files')
  @TaskScoped()
  async listFiles(@CallerOf() caller: Caller, @Param('cid') cid: string, @Query() query: Record<string, unknown>) {
    checkContainerScope(caller, cid);
    const page = await this.containerFiles.list(caller.principalId, cid, parseListQuery(query));
    return listBody(page.items.map(presentContainerFile), page.hasMore);
  }

  @Get(':cid/files/:fid')
  @TaskScoped()
  async getFile(@CallerOf() caller: Caller, @Param('cid') cid: string, @Param('fid') fid: string) {
    checkContainerScope(caller, cid);
    return presentContainerFile(await this.containerFiles.get(caller.principalId, cid, fid));
  }

  @Get(':cid/files/:fid/content')
  @TaskScoped()
  @Concurrency('downloads')
  async content(
    @CallerOf() caller: Caller,
    @Param('cid') cid: string,
    @Param('fid') fid: string,
    @Req() req: Request,
    @Res() res: Response,
  ) {
    checkContainerScope(caller, cid);
    await this.writer.download(req, res, await this.containerFiles.download(caller.principalId, cid, fid));
  }

  @Delete(':cid/files/:fid')
  async deleteFile(@PrincipalId() principalId: string, @Param('cid') cid: string, @Param('fid') fid: string) {
    await this.containerFiles.delete(principalId, cid, fid);
    return { id: fid, object: 'container.file.deleted', deleted: true };
  }
}
