import { Global, Module } from '@nestjs/common';
import { PreviewsModule } from '../previews/previews.module';
import { ConcurrencyLimits } from './concurrency-limits';
import { LimitsController } from './limits.controller';

/** GET /v1/limits, and the per-principal concurrency limits every feature's routes count against. */
@Global()
@Module({
  imports: [PreviewsModule],
  controllers: [LimitsController],
  providers: [ConcurrencyLimits],
  exports: [ConcurrencyLimits],
})
export class LimitsModule {}
