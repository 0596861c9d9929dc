import { Module } from '@nestjs/common';
import { UploadReceiverModule } from '../uploads/receiver/upload-receiver.module';
import { ArtifactWriter } from './artifact-writer.service';
import { ContainerFilesService } from './container-files.service';
import { ContainersController } from './containers.controller';
import { ContainersService } from './containers.service';

/** Containers and their files (the artifacts), and the artifact writer agents use. */
@Module({
  imports: [UploadReceiverModule],
  controllers: [ContainersController],
  providers: [ContainersService, ContainerFilesService, ArtifactWriter],
  exports: [ContainerFilesService, ArtifactWriter],
})
export class ContainersModule {}
