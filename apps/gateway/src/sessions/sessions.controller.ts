import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { PrincipalId } from '../auth/auth';
import { listBody, parseListQuery } from '../http/list-query';
import { presentContainerFile, presentSession } from '../http/presenters';
import { ResponseWriter } from '../http/response-writer';
import { acceptMetadata, bodyObject } from './metadata';
import { SessionsService } from './sessions.service';
import { JsonBody } from '../http/json-body.decorator';

@Controller('v1/sessions')
export class SessionsController {
  constructor(
    @Inject(SessionsService) private readonly sessions: SessionsService,
    @Inject(ResponseWriter) private readonly writer: ResponseWriter,
  ) {}

  @Post()
  @JsonBody()
  @HttpCode(200)
  async create(@PrincipalId() principalId: string, @Body() body: unknown) {
    return presentSession(await this.sessions.create(principalId, acceptMetadata(bodyObject(body).metadata)));
  }

  @Get()
  async list(@PrincipalId() principalId: string, @Query() query: Record<string, unknown>) {
    const page = await this.sessions.list(principalId, parseListQuery(query));
    return listBody(page.items.map(presentSession), page.hasMore);
  }

  @Get(':id')
  async get(@PrincipalId() principalId: string, @Param('id') id: string) {
    return presentSession(await this.sessions.get(principalId, id));
  }

  @Delete(':id')
  async delete(@PrincipalId() principalId: string, @Param('id') id: string) {
    await this.sessions.delete(principalId, id);
    return { id, object: 'session.deleted', deleted: true };
  }

  /** Without `limit` the whole listing is streamed; with it, one page. */
  @Get(':id/files')
  async files(
    @PrincipalId() principalId: string,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
    @Res() res: Response,
  ) {
    const { limit, after } = parseListQuery(query, { order: 'asc' });
    const listing = await this.sessions.listing(principalId, id, {
      limit: query.limit === undefined ? undefined : limit,
      after,
    });
    if (listing.kind === 'page') {
      res
        .status(200)
        .json({ object: 'list', files: listing.page.items.map(presentContainerFile), has_more: listing.page.hasMore });
      return;
    }
    await this.writer.jsonStream(res, {
      head: '{"object":"list","files":[',
      batches: listing.batches,
      present: presentContainerFile,
      tail: '],"has_more":false}',
    });
  }
}
