import { Module } from '@nestjs/common';
import { UploadsModule } from '../uploads/uploads.module';
import { FilesController } from './files.controller';
import { FilesService } from './files.service';

@Module({
  imports: [UploadsModule],
  controllers: [FilesController],
  providers: [FilesService],
  exports: [FilesService],
})
export class FilesModule {}
