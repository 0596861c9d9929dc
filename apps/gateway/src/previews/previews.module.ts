import { Module } from '@nestjs/common';
import { ContainersModule } from '../containers/containers.module';
import { ConverterAvailability } from './converter-availability';
import { PreviewsController } from './previews.controller';
import { PreviewsService } from './previews.service';

@Module({
  imports: [ContainersModule],
  controllers: [PreviewsController],
  providers: [PreviewsService, ConverterAvailability],
  exports: [ConverterAvailability],
})
export class PreviewsModule {}
