import type {
  ArchiveRow,
  ContainerFileListing,
  ContainerRow,
  FileRow,
  ResponseRow,
  SessionRow,
  UploadPartRow,
  UploadRow,
} from '@app/db';

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
const PURPOSE_OUT: Record<string, string> = { fine_tune: 'fine-tune' };

/** The OpenAI-shaped file object (docs/api.md §2). */
export function presentFile(file: FileRow) {
  return {
    id: file.id,
    object: 'file' as const,
    bytes: Number(file.bytes),
    created_at: seconds(file.createdAt),
    expires_at: file.expiresAt ? seconds(file.expiresAt) : null,
    filename: file.filename,
    purpose: PURPOSE_OUT[file.purpose] ?? file.purpose,
    content_type: file.contentType,
    sha256: file.sha256,
    status: file.status,
    status_details: null,
  };
}

export function presentSession(session: SessionRow) {
  return {
    id: session.id,
    object: 'session' as const,
    container_id: session.currentContainerId,
    created_at: seconds(session.createdAt),
    metadata: session.metadata ?? {},
  };
}

export function presentContainer(container: ContainerRow) {
  return {
    id: container.id,
    object: 'container' as const,
    session_id: container.sessionId,
    name: container.name,
    status: 'running' as const,
    created_at: seconds(container.createdAt),
    expires_after: null,
    last_active_at: seconds(container.createdAt),
  };
}

/** A container file: an artifact of the session (docs/api.md §3). */
export function presentContainerFile(file: ContainerFileListing) {
  return {
    id: file.id,
    object: 'container.file' as const,
    container_id: file.containerId,
    session_id: file.sessionId,
    filename: file.filename,
    path: `/mnt/data/${file.filename}`,
    bytes: Number(file.bytes),
    content_type: file.contentType,
    sha256: file.sha256,
    created_at: seconds(file.createdAt),
    source: file.source,
    response_id: file.responseId,
  };
}

/** Where a container file's bytes download, built from the configured public base URL only (docs/api.md §4). */
export function downloadUrl(publicBaseUrl: string, containerId: string, fileId: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/v1/containers/${containerId}/files/${fileId}/content`;
}

/** The OpenAI-shaped response object (docs/api.md §4); `output` is always an array. */
export function presentResponse(response: ResponseRow, publicBaseUrl: string) {
  const output = response.output
    ? [
        {
          type: 'message' as const,
          id: response.output.message_id,
          status: 'completed' as const,
          role: 'assistant' as const,
          content: [
            {
              type: 'output_text' as const,
              text: response.output.text,
              annotations: response.output.citations.map((citation) => ({
                type: 'container_file_citation' as const,
                container_id: response.containerId,
                file_id: citation.file_id,
                filename: citation.filename,
                download_url: downloadUrl(publicBaseUrl, response.containerId, citation.file_id),
                start_index: citation.start_index,
                end_index: citation.end_index,
              })),
              logprobs: [],
            },
          ],
        },
      ]
    : [];
  return {
    id: response.id,
    object: 'response' as const,
    created_at: seconds(response.createdAt),
    completed_at: response.completedAt ? seconds(response.completedAt) : null,
    status: response.status,
    session_id: response.sessionId,
    container_id: response.containerId,
    agent: response.agent,
    model: response.agent,
    output,
    error: response.error,
    incomplete_details: null,
    metadata: response.metadata ?? {},
  };
}

/** The 202 body of an archive still being built (docs/api.md §7). */
export function presentArchiveProgress(archive: ArchiveRow) {
  return {
    object: 'session.archive' as const,
    status: 'in_progress' as const,
    files_done: archive.filesDone,
    files_total: archive.filesTotal,
    bytes_done: Number(archive.bytesDone),
    bytes_total: Number(archive.bytesTotal),
  };
}

/** The OpenAI-shaped upload object (docs/api.md §2a); `status` as the client should see it now. */
export function presentUpload(upload: UploadRow, status: string, file: FileRow | null) {
  return {
    id: upload.id,
    object: 'upload' as const,
    bytes: Number(upload.bytes),
    created_at: seconds(upload.createdAt),
    expires_at: seconds(upload.expiresAt),
    filename: upload.filename,
    purpose: PURPOSE_OUT[upload.purpose] ?? upload.purpose,
    mime_type: upload.mimeType,
    status,
    file: file ? presentFile(file) : null,
  };
}

/** An upload's part (OpenAI's `upload.part`, plus its size and SHA-256 for a client that resumes). */
export function presentUploadPart(part: UploadPartRow) {
  return {
    id: part.id,
    object: 'upload.part' as const,
    upload_id: part.uploadId,
    created_at: seconds(part.createdAt),
    bytes: Number(part.bytes),
    sha256: part.sha256,
  };
}
