import { Body, Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { APP_CONFIG, type GatewayConfig } from '@app/common';
import { PrincipalId } from '../auth/auth';
import { presentResponse } from '../http/presenters';
import { Concurrency } from '../limits/concurrency-limits';
import { ResponsesService } from './responses.service';
import { JsonBody } from '../http/json-body.decorator';

@Controller('v1/responses')
export class ResponsesController {
  private readonly publicBaseUrl: string;

  constructor(
    @Inject(ResponsesService) private readonly responses: ResponsesService,
    @Inject(APP_CONFIG) config: GatewayConfig,
  ) {
    this.publicBaseUrl = config.UHP_PUBLIC_BASE_URL ?? `http://127.0.0.1:${config.PORT}`;
  }

  @Post()
  @JsonBody()
  @HttpCode(200)
  @Concurrency('responses')
  async create(@PrincipalId() principalId: string, @Body() body: unknown) {
    return presentResponse(await this.responses.create(principalId, body), this.publicBaseUrl);
  }

  @Get(':id')
  async get(@PrincipalId() principalId: string, @Param('id') id: string) {
    return presentResponse(await this.responses.get(principalId, id), this.publicBaseUrl);
  }
}
