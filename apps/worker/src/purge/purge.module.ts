import { Module } from '@nestjs/common';
import { PurgeProcessor } from './purge.processor';
import { PurgeService } from './purge.service';
import { SweepService } from './sweep.service';

/** The purge queue's consumer: purging unreferenced objects, and the periodic sweep. */
@Module({ providers: [PurgeService, SweepService, PurgeProcessor] })
export class PurgeModule {}
