import { Module } from '@nestjs/common';
import { PartArrivalMiddleware, PartArrivalOrder } from './part-arrival';
import { UploadsController } from './uploads.controller';
import { UploadsModule } from './uploads.module';
import { UploadsService } from './uploads.service';

/** `/v1/uploads`: resumable uploads in parts (OpenAI's Uploads API), on the same receiver and object life. */
@Module({
  imports: [UploadsModule],
  controllers: [UploadsController],
  providers: [UploadsService, PartArrivalOrder, PartArrivalMiddleware],
  exports: [UploadsService, PartArrivalOrder, PartArrivalMiddleware],
})
export class ResumableUploadsModule {}
