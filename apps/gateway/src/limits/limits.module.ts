import { Module } from '@nestjs/common';
import { PreviewsModule } from '../previews/previews.module';
import { LimitsController } from './limits.controller';

@Module({ imports: [PreviewsModule], controllers: [LimitsController] })
export class LimitsModule {}
