import { Module } from '@nestjs/common';
import { APP_CONFIG, currentRequestId, type GatewayConfig } from '@app/common';
import { AgentRegistry } from './agent-registry';
import { HttpAgent } from './http.agent';
import { ReportAgent } from './report.agent';

function agentRegistry(config: GatewayConfig): AgentRegistry {
  const publicBaseUrl = config.UHP_PUBLIC_BASE_URL ?? `http://127.0.0.1:${config.PORT}`;
  const callbackBaseUrl = (config.AGENT_CALLBACK_BASE_URL ?? publicBaseUrl).replace(/\/+$/, '');
  const http = new HttpAgent({
    url: config.AGENT_HTTP_URL,
    token: config.AGENT_HTTP_TOKEN,
    callbackBaseUrl,
    requestId: currentRequestId,
  });
  return new AgentRegistry([new ReportAgent(), http], config.AGENT_DEFAULT);
}

/** The agents this gateway offers (the built-in `report`, and `http` for an operator's own service). */
@Module({
  providers: [{ provide: AgentRegistry, useFactory: agentRegistry, inject: [APP_CONFIG] }],
  exports: [AgentRegistry],
})
export class AgentsModule {}
