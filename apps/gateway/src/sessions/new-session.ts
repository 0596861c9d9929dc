import { newId } from '@app/contracts';
import type { ContainerRow, SessionRow } from '@app/db';
import type { Work } from '@app/lifecycle';

/** A new session with its first, current container, inside the caller's unit of work. */
export async function createSession(
  work: Work,
  principalId: string,
  options: { metadata?: Record<string, string>; containerName?: string | null } = {},
): Promise<{ session: SessionRow; container: ContainerRow }> {
  const ids = { sessionId: newId('session'), containerId: newId('container') };
  const session = await work.sessions.create(principalId, {
    id: ids.sessionId,
    currentContainerId: ids.containerId,
    metadata: options.metadata ?? {},
  });
  const container = await work.containers.create(principalId, {
    id: ids.containerId,
    sessionId: ids.sessionId,
    name: options.containerName ?? null,
  });
  return { session, container };
}
