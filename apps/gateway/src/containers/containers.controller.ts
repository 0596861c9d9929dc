import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { PrincipalId } from '../auth/auth';
import { listBody, parseListQuery } from '../http/list-query';
import { presentContainer, presentContainerFile } from '../http/presenters';
import { bodyObject } from '../sessions/metadata';
import { ContainerFilesService } from './container-files.service';
import { ContainersService } from './containers.service';

const isMultipart = (req: Request) => /^multipart\/form-data/i.test(req.headers['content-type'] ?? '');

@Controller('v1/containers')
export class ContainersController {
  constructor(
    @Inject(ContainersService) private readonly containers: ContainersService,
    @Inject(ContainerFilesService) private readonly containerFiles: ContainerFilesService,
  ) {}

  @Post()
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
  @HttpCode(200)
  async addFile(@PrincipalId() principalId: string, @Param('cid') cid: string, @Req() req: Request, @Body() body: unknown) {
    const file = isMultipart(req) ? await this.containerFiles.upload(req, principalId, cid) : await this.containerFiles.copy(principalId, cid, bodyObject(body));
    return presentContainerFile(file);
  }

  @Get(':cid/files')
  async listFiles(@PrincipalId() principalId: string, @Param('cid') cid: string, @Query() query: Record<string, unknown>) {
    const page = await this.containerFiles.list(principalId, cid, parseListQuery(query));
    return listBody(page.items.map(presentContainerFile), page.hasMore);
  }

  @Get(':cid/files/:fid')
  async getFile(@PrincipalId() principalId: string, @Param('cid') cid: string, @Param('fid') fid: string) {
    return presentContainerFile(await this.containerFiles.get(principalId, cid, fid));
  }

  @Get(':cid/files/:fid/content')
  async content(@PrincipalId() principalId: string, @Param('cid') cid: string, @Param('fid') fid: string, @Req() req: Request, @Res() res: Response) {
    await this.containerFiles.download(req, res, principalId, cid, fid);
  }

  @Delete(':cid/files/:fid')
  async deleteFile(@PrincipalId() principalId: string, @Param('cid') cid: string, @Param('fid') fid: string) {
    await this.containerFiles.delete(principalId, cid, fid);
    return { id: fid, object: 'container.file.deleted', deleted: true };
  }
}
