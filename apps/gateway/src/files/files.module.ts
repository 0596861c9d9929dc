import { Module } from '@nestjs/common';
import { UploadReceiverModule } from '../uploads/receiver/upload-receiver.module';
import { FilesController } from './files.controller';
import { FilesService } from './files.service';

@Module({
  imports: [UploadReceiverModule],
  controllers: [FilesController],
  providers: [FilesService],
  exports: [FilesService],
})
export class FilesModule {}
