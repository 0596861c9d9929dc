import { Controller, Get, Inject, Param } from '@nestjs/common';
import { ApiError, APP_CONFIG, type GatewayConfig } from '@app/common';
import { PrincipalId } from '../auth/auth';
import { ContainerFilesService } from '../containers/container-files.service';
import { PREVIEW_FORMATS } from '../limits/limits.controller';

/**
 * PDF previews (PROFILE §6). No converter ships in this build, so a file the caller can see answers
 * 501 preview_unavailable (never a broken PDF); anything else is the usual 404.
 */
@Controller('v1/containers/:cid/files/:fid/pdf')
export class PreviewsController {
  constructor(
    @Inject(ContainerFilesService) private readonly containerFiles: ContainerFilesService,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Get()
  async preview(@PrincipalId() principalId: string, @Param('cid') cid: string, @Param('fid') fid: string): Promise<never> {
    await this.containerFiles.get(principalId, cid, fid);
    const reason = this.config.PREVIEW_ENABLED && PREVIEW_FORMATS.length === 0 ? 'No preview converter is installed on this server.' : 'Previews are turned off on this server.';
    throw new ApiError('preview_unavailable', reason);
  }
}
