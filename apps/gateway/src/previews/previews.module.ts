import { Module } from '@nestjs/common';
import { JobsModule } from '../jobs/jobs.module';
import { ContainersModule } from '../containers/containers.module';
import { ConverterAvailability } from './converter-availability';
import { PreviewsController } from './previews.controller';
import { PreviewsService } from './previews.service';

@Module({
  imports: [ContainersModule, JobsModule],
  controllers: [PreviewsController],
  providers: [PreviewsService, ConverterAvailability],
  exports: [ConverterAvailability],
})
export class PreviewsModule {}
