import { ApiError } from '@app/common';
import { isId, newId } from '@app/contracts';
import type { ContainerFileRow, ContainerRow } from '@app/db';
import type { Work } from '@app/lifecycle';
import { USER_ORIGIN, type ArtifactOrigin } from '../auth/task-scope';

/**
 * The live container, held for adding rows under it until the unit of work ends: its session first
 * (shared), then the container. A concurrent delete of either then waits for this work and takes its
 * rows with it, or went first and this finds nothing (404): never a live row in a deleted container.
 */
export async function holdContainerForWrite(
  work: Work,
  principalId: string,
  containerId: string,
): Promise<ContainerRow> {
  const container = isId('container', containerId)
    ? await work.containers.findForOwner(principalId, containerId)
    : null;
  if (!container || !(await work.sessions.lockLive(principalId, container.sessionId, 'share')))
    throw ApiError.notFound('container');
  const held = await work.containers.lockLive(principalId, containerId);
  if (!held) throw ApiError.notFound('container');
  return held;
}

/**
 * Copies an uploaded file into a held container: a new row and one more reference, never a second copy
 * of the bytes. The file is locked too, so a concurrent delete of it goes before or after, not between.
 * `param` names the input in the 404 when the file is not the caller's.
 */
export async function copyFileInto(
  work: Work,
  principalId: string,
  container: ContainerRow,
  fileId: unknown,
  param: string,
  origin: ArtifactOrigin = USER_ORIGIN,
): Promise<ContainerFileRow> {
  const file = isId('file', fileId) ? await work.files.lockLive(principalId, fileId) : null;
  if (!file || !(await work.retain(principalId, file.objectId))) throw ApiError.notFound('file', param);
  return work.containerFiles.create(principalId, {
    id: newId('file'),
    sessionId: container.sessionId,
    containerId: container.id,
    objectId: file.objectId,
    filename: file.filename,
    bytes: file.bytes,
    contentType: file.contentType,
    sha256: file.sha256,
    ...origin,
    createdAt: new Date(),
  });
}
