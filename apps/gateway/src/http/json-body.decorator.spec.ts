import { Controller, Get, Post, RequestMethod } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { ContainersController } from '../containers/containers.controller';
import { FilesController } from '../files/files.controller';
import { ResponsesController } from '../responses/responses.controller';
import { SessionsController } from '../sessions/sessions.controller';
import { TusController } from '../tus/tus.controller';
import { UploadsController } from '../uploads/openai/uploads.controller';
import { JsonBody, jsonBodyRoutes } from './json-body.decorator';

describe('jsonBodyRoutes: the routes that read a JSON body are the ones marked at their declaration', () => {
  it('joins the controller and method paths of marked handlers only', () => {
    @Controller('/v1/things/')
    class ThingsController {
      @Post()
      @JsonBody()
      create() {}

      @Post(':id/parts')
      part() {}

      @Post(['a', 'b'])
      @JsonBody()
      either() {}

      @Get(':id')
      read() {}
    }
    expect(jsonBodyRoutes([ThingsController])).toEqual([
      { path: 'v1/things', method: RequestMethod.POST },
      { path: 'v1/things/a', method: RequestMethod.POST },
      { path: 'v1/things/b', method: RequestMethod.POST },
    ]);
  });

  it("the gateway's JSON routes: sessions, containers, container files, responses and the OpenAI Uploads API", () => {
    const controllers = [
      SessionsController,
      ContainersController,
      ResponsesController,
      UploadsController,
      FilesController,
      TusController,
    ];
    const routes = jsonBodyRoutes(controllers).map(({ path, method }) => `${RequestMethod[method]} ${path}`);
    expect(routes.sort()).toEqual(
      [
        'POST v1/sessions',
        'POST v1/containers',
        'POST v1/containers/:cid/files',
        'POST v1/responses',
        'POST v1/uploads',
        'POST v1/uploads/:id/complete',
        'POST v1/uploads/:id/cancel',
      ].sort(),
    );
  });
});
