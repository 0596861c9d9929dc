import { Global, Module } from '@nestjs/common';
import { PreviewConverters } from './preview-converters.provider';
import { PreviewMetrics } from './preview-metrics';
import { PreviewProcessor } from './preview.processor';
import { PreviewConversionService } from './preview-conversion.service';
import { PreviewSources } from './preview-sources';

/**
 * Preview conversion: the converters, the preview queue's consumer and its metrics. Global so /readyz can report the
 * converters.
 */
@Global()
@Module({
  providers: [PreviewConverters, PreviewMetrics, PreviewSources, PreviewConversionService, PreviewProcessor],
  exports: [PreviewConverters],
})
export class PreviewsModule {}
