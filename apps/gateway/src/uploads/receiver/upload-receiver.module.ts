import { Module } from '@nestjs/common';
import { UploadReceiver } from './upload-receiver';

/** The streaming multipart receiver, for every route that takes an upload. */
@Module({ providers: [UploadReceiver], exports: [UploadReceiver] })
export class UploadReceiverModule {}
