import { Module } from '@nestjs/common';
import { UploadReceiverModule } from '../receiver/upload-receiver.module';
import { ResumableUploadsModule } from '../resumable/resumable-uploads.module';
import { PartArrivalMiddleware, PartArrivalOrder } from './part-arrival';
import { UploadsController } from './uploads.controller';
import { UploadsService } from './uploads.service';

/** `/v1/uploads`: resumable uploads in parts (OpenAI's Uploads API), on the same receiver and object life. */
@Module({
  imports: [UploadReceiverModule, ResumableUploadsModule],
  controllers: [UploadsController],
  providers: [UploadsService, PartArrivalOrder, PartArrivalMiddleware],
  exports: [PartArrivalOrder, PartArrivalMiddleware],
})
export class UploadsModule {}
