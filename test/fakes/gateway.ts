import { Readable } from 'node:stream';
import { Registry } from 'prom-client';
import { gatewayConfigSchema, type GatewayConfig } from '@app/common';
import { AgentRegistry } from '../../apps/gateway/src/agents/agent-registry';
import type { Agent } from '../../apps/gateway/src/agents/agent.port';
import { ReportAgent } from '../../apps/gateway/src/agents/report.agent';
import { ArchivesService } from '../../apps/gateway/src/archives/archives.service';
import { ArtifactWriter } from '../../apps/gateway/src/containers/artifact-writer.service';
import { ContainerFilesService } from '../../apps/gateway/src/containers/container-files.service';
import { ContainersService } from '../../apps/gateway/src/containers/containers.service';
import { Downloads } from '../../apps/gateway/src/downloads/downloads';
import { FilesService } from '../../apps/gateway/src/files/files.service';
import type { UploadBody } from '../../apps/gateway/src/http/upload-body';
import { JobCompletions } from '../../apps/gateway/src/jobs/job-completions';
import { JobEvents, type JobFinishedListener } from '../../apps/gateway/src/jobs/job-events';
import { ConverterAvailability } from '../../apps/gateway/src/previews/converter-availability';
import { PreviewsService } from '../../apps/gateway/src/previews/previews.service';
import { AgentRunner } from '../../apps/gateway/src/responses/agent-runner.service';
import { ResponseInputs } from '../../apps/gateway/src/responses/response-inputs.service';
import { ResponseMetrics } from '../../apps/gateway/src/responses/response-metrics';
import { ResponsesService } from '../../apps/gateway/src/responses/responses.service';
import { SessionsService } from '../../apps/gateway/src/sessions/sessions.service';
import { UploadReceiver } from '../../apps/gateway/src/uploads/receiver/upload-receiver';
import { inMemoryPlatform, silentLogger } from './platform';

/** The gateway's config as the services see it: the schema's defaults, with these overrides. */
export function gatewayConfig(overrides: Record<string, string> = {}): GatewayConfig {
  return gatewayConfigSchema.parse({ UHP_MAX_FILE_BYTES: '1048576', UHP_MAX_INLINE_FILE_BYTES: '65536', ...overrides });
}

/** Job-finished events a test announces itself, as the worker's queue would. */
export class FakeJobEvents extends JobEvents {
  private readonly listeners: JobFinishedListener[] = [];

  onFinished(listener: JobFinishedListener): void {
    this.listeners.push(listener);
  }

  finish(jobId: string): void {
    for (const listener of this.listeners) listener(jobId);
  }
}

/**
 * The gateway's services, real, over an in-memory platform: what a unit test of a service builds.
 * `agents` replaces the built-in agents (the report agent by default).
 */
export function gatewayServices(options: { config?: Record<string, string>; agents?: Agent[] } = {}) {
  const platform = inMemoryPlatform();
  const config = gatewayConfig(options.config);
  const downloads = new Downloads(platform.store, silentLogger);
  const receiver = new UploadReceiver(config, platform.stager, silentLogger);
  const files = new FilesService(platform.uow, platform.files, receiver, downloads);
  const sessions = new SessionsService(platform.uow, platform.sessions, platform.containerFiles);
  const containers = new ContainersService(platform.uow, platform.containers);
  const artifacts = new ArtifactWriter(config, platform.uow, platform.stager);
  const containerFiles = new ContainerFilesService(
    platform.uow,
    containers,
    platform.containerFiles,
    receiver,
    artifacts,
    downloads,
  );
  const agents = new AgentRegistry(options.agents ?? [new ReportAgent()], options.agents?.[0]?.name ?? 'report');
  const runner = new AgentRunner(
    artifacts,
    platform.store,
    platform.containerFiles,
    platform.responses,
    new ResponseMetrics(new Registry()),
    silentLogger,
  );
  const inputs = new ResponseInputs(config, platform.sessions, platform.files, platform.stager);
  const responses = new ResponsesService(config, platform.uow, platform.responses, inputs, agents, runner);
  const converters = new ConverterAvailability(config, platform.converterStatus);
  const jobEvents = new FakeJobEvents();
  const completions = new JobCompletions(jobEvents, config);
  const previews = new PreviewsService(
    config,
    containerFiles,
    platform.previews,
    converters,
    downloads,
    platform.jobs,
    completions,
    platform.uow,
    silentLogger,
  );
  const archives = new ArchivesService(
    platform.sessions,
    platform.containerFiles,
    platform.archives,
    platform.jobs,
    completions,
    downloads,
    config,
    platform.uow,
    silentLogger,
  );
  return {
    platform,
    config,
    files,
    sessions,
    containers,
    containerFiles,
    artifacts,
    responses,
    previews,
    archives,
    converters,
    jobEvents,
    completions,
  };
}

export type GatewayServices = ReturnType<typeof gatewayServices>;

const BOUNDARY = 'unitBoundary0123456789';

/** A multipart/form-data body as the upload path reads it, from parts given in order. */
export function multipartBody(
  parts: Array<
    { name: string; value: string } | { name: string; filename: string; data: Buffer | string; type?: string }
  >,
): UploadBody {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    if ('filename' in part) {
      chunks.push(
        Buffer.from(
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.name}"; filename="${part.filename}"\r\nContent-Type: ${part.type ?? 'application/octet-stream'}\r\n\r\n`,
        ),
      );
      chunks.push(Buffer.from(part.data));
      chunks.push(Buffer.from('\r\n'));
    } else {
      chunks.push(
        Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.name}"\r\n\r\n${part.value}\r\n`),
      );
    }
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  const body = Buffer.concat(chunks);
  const stream = Readable.from([body]);
  return {
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(body.length) },
    stream,
    isComplete: () => stream.readableEnded,
  };
}

/** A file upload body with a `file` part and the given fields after it (as the OpenAI SDK sends them). */
export const fileUpload = (
  filename: string,
  data: Buffer | string,
  fields: Record<string, string> = {},
  type?: string,
) =>
  multipartBody([
    { name: 'file', filename, data, type },
    ...Object.entries(fields).map(([name, value]) => ({ name, value })),
  ]);

/** Reads a download whole. */
export async function readDownload(download: { open(): Promise<Readable> }): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await download.open()) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
