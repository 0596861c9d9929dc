import { Module } from '@nestjs/common';
import { ResumableUploadsModule } from '../uploads/resumable/resumable-uploads.module';
import { TusController } from './tus.controller';
import { TusDiscoveryMiddleware, TusHeadersMiddleware } from './tus.middleware';
import { TusService } from './tus.service';

/** tus 1.0 at /v1/tus, on the resumable-upload machinery /v1/uploads uses too. */
@Module({
  imports: [ResumableUploadsModule],
  controllers: [TusController],
  providers: [TusService, TusDiscoveryMiddleware, TusHeadersMiddleware],
})
export class TusModule {}
