import { Global, Module } from '@nestjs/common';
import { PreviewConverters } from './preview-converters.provider';
import { PreviewMetrics } from './preview-metrics';
import { PreviewProcessor } from './preview.processor';
import { PreviewService } from './preview.service';

/** Preview conversion: the converters, the preview queue's consumer and its metrics. Global so /readyz can report the converters. */
@Global()
@Module({
  providers: [PreviewConverters, PreviewMetrics, PreviewService, PreviewProcessor],
  exports: [PreviewConverters],
})
export class PreviewsModule {}
