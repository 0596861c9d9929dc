import { ApiError } from '@app/common';
import type { ContainerFileSource } from '@app/db';
import type { Caller } from './auth';

/** Who wrote a container file: the user, or the agent of a response (docs/api.md §3). */
export interface ArtifactOrigin {
  source: ContainerFileSource;
  responseId: string | null;
}

export const USER_ORIGIN: ArtifactOrigin = { source: 'user', responseId: null };

export const originOf = (caller: Caller): ArtifactOrigin =>
  caller.task ? { source: 'assistant', responseId: caller.task.responseId } : USER_ORIGIN;

/** A task token reaches its own container only; anything else is the same 404 as a missing container. */
export function checkContainerScope(caller: Caller, containerId: string): void {
  if (caller.task && caller.task.containerId !== containerId) throw ApiError.notFound('container');
}

/** A task token reads its response's input files only. */
export function checkInputFileScope(caller: Caller, fileId: unknown, param: string | null = null): void {
  if (caller.task && (typeof fileId !== 'string' || !caller.task.inputFileIds.includes(fileId)))
    throw ApiError.notFound('file', param);
}
