import { Body, Controller, Get, HttpCode, Inject, Param, Post, Req, UseGuards } from '@nestjs/common';
import type { Request } from 'express';
import { APP_CONFIG, type GatewayConfig } from '@app/common';
import { effectiveLimitsOf } from '../../limits/effective-limits';
import { PrincipalId } from '../../auth/auth';
import { presentUpload, presentUploadPart } from '../../http/presenters';
import { uploadBodyOf, UploadPartLengthGuard } from '../../http/upload-body';
import { Concurrency } from '../../limits/concurrency-limits';
import { arrivalOf } from './part-arrival';
import { parseCompleteUpload, parseCreateUpload } from './upload-request';
import { JsonBody } from '../../http/json-body.decorator';
import { type UploadView, visibleStatus } from '../resumable/upload-status';
import { UploadsService } from './uploads.service';

const present = ({ upload, file }: UploadView) => presentUpload(upload, visibleStatus(upload), file);

/** Resumable uploads, shaped as OpenAI's Uploads API (docs/api.md §2a). */
@Controller('v1/uploads')
export class UploadsController {
  constructor(
    @Inject(UploadsService) private readonly uploads: UploadsService,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Post()
  @JsonBody()
  @HttpCode(200)
  async create(@PrincipalId() principalId: string, @Body() body: unknown) {
    return present(
      await this.uploads.create(principalId, parseCreateUpload(body, effectiveLimitsOf(this.config).maxUploadBytes)),
    );
  }

  @Get(':id')
  async get(@PrincipalId() principalId: string, @Param('id') id: string) {
    return present(await this.uploads.get(principalId, id));
  }

  @Get(':id/parts')
  async parts(@PrincipalId() principalId: string, @Param('id') id: string) {
    const parts = await this.uploads.listParts(principalId, id);
    return { object: 'list' as const, data: parts.map(presentUploadPart), has_more: false };
  }

  @Post(':id/parts')
  @HttpCode(200)
  @UseGuards(UploadPartLengthGuard)
  @Concurrency('uploads')
  async addPart(@PrincipalId() principalId: string, @Param('id') id: string, @Req() req: Request) {
    return presentUploadPart(await this.uploads.addPart(principalId, id, uploadBodyOf(req), arrivalOf(req)));
  }

  @Post(':id/complete')
  @JsonBody()
  @HttpCode(200)
  async complete(@PrincipalId() principalId: string, @Param('id') id: string, @Body() body: unknown) {
    return present(await this.uploads.complete(principalId, id, parseCompleteUpload(body)));
  }

  @Post(':id/cancel')
  @JsonBody()
  @HttpCode(200)
  async cancel(@PrincipalId() principalId: string, @Param('id') id: string) {
    return present(await this.uploads.cancel(principalId, id));
  }
}
