import { Module } from '@nestjs/common';
import { PlatformIoModule, platformHealth } from '@app/common';
import { DbModule, PrismaService } from '@app/db';
import { PurgeProcessor } from './purge/purge.processor';
import { PurgeService } from './purge/purge.service';

@Module({
  imports: [DbModule, PlatformIoModule.forRoot({ failFastOnRedisDown: false }), platformHealth(PrismaService)],
  providers: [PurgeService, PurgeProcessor],
})
export class WorkerModule {}
