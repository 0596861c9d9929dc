import { ApiError } from '@app/common';
import type { Agent } from './agent.port';

/** The agents this gateway offers, by name, and the default one. */
export class AgentRegistry {
  private readonly byName: Map<string, Agent>;

  constructor(
    agents: Agent[],
    private readonly defaultName: string,
  ) {
    this.byName = new Map(agents.map((agent) => [agent.name, agent]));
  }

  get names(): string[] {
    return [...this.byName.keys()];
  }

  /** The named agent, or the default; an agent that cannot run here is refused before any side effect. */
  pick(name: string | null): Agent {
    const agent = this.byName.get(name ?? this.defaultName);
    if (!agent)
      throw ApiError.invalid(
        `Unknown agent ${JSON.stringify(name)}; this server offers: ${this.names.join(', ')}.`,
        'agent',
      );
    const reason = agent.unavailableReason();
    if (reason) throw ApiError.invalid(`${reason}.`, 'agent');
    return agent;
  }
}
