import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { ContainersModule } from '../containers/containers.module';
import { AgentRunner } from './agent-runner.service';
import { ResponseInputs } from './response-inputs.service';
import { ResponseMetrics } from './response-metrics';
import { ResponsesController } from './responses.controller';
import { ResponsesService } from './responses.service';

@Module({
  imports: [AgentsModule, ContainersModule],
  controllers: [ResponsesController],
  providers: [ResponsesService, ResponseInputs, AgentRunner, ResponseMetrics],
})
export class ResponsesModule {}
