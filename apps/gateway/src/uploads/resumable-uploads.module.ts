import { Module } from '@nestjs/common';
import { PartArrivalMiddleware, PartArrivalOrder } from './part-arrival';
import { UploadAdmission } from './upload-admission';
import { UploadsController } from './uploads.controller';
import { UploadsModule } from './uploads.module';
import { UploadsService } from './uploads.service';

/** `/v1/uploads`: resumable uploads in parts (OpenAI's Uploads API), on the same receiver and object life. */
@Module({
  imports: [UploadsModule],
  controllers: [UploadsController],
  providers: [UploadsService, UploadAdmission, PartArrivalOrder, PartArrivalMiddleware],
  exports: [UploadsService, UploadAdmission, PartArrivalOrder, PartArrivalMiddleware],
})
export class ResumableUploadsModule {}
