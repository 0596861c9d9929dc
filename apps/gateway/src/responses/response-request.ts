import { extension } from 'mime-types';
import { ApiError } from '@app/common';
import { acceptMetadata } from '../sessions/metadata';
import { resolveContentType } from '../uploads/receiver/content-type';
import { acceptFilename } from '../uploads/receiver/filename';
import { decodeDataUrl } from './data-url';

export type InputPart =
  | { kind: 'text'; role: string; text: string }
  | { kind: 'inline'; param: string; filename: string; contentType: string; bytes: Buffer }
  | { kind: 'file_id'; param: string; fileId: string };

/** A `POST /v1/responses` body, checked whole: nothing about it can fail later. */
export interface ResponseRequest {
  sessionId: string | null;
  /** The agent the request names through `agent` or `model`; null picks the default. */
  agent: string | null;
  instructions: string | null;
  parts: InputPart[];
  metadata: Record<string, string>;
}

export interface ResponseRequestLimits {
  maxInlineFileBytes: number;
  maxInputFiles: number;
  agentNames: readonly string[];
}

const ROLES = new Set(['user', 'system', 'developer', 'assistant']);

const invalid = (message: string, param: string) => ApiError.invalid(message, param);
const present = (value: unknown) => value !== undefined && value !== null;

/**
 * OpenAI fields that ask for something this server does not serve (docs/api.md §4): refused with their
 * param, never silently dropped. Fields that would not change the result (model settings, store,
 * include, user, …) are ignored.
 */
function refuseUnserved(body: Record<string, unknown>): void {
  if (body.stream === true)
    throw invalid(
      'Streaming is not served: send stream false or leave it out; the answer comes as one JSON response.',
      'stream',
    );
  if (body.background === true)
    throw invalid('Background responses are not served; the response completes within the request.', 'background');
  if (present(body.previous_response_id))
    throw invalid(
      'previous_response_id is not served: pass session_id to continue in the same session and container.',
      'previous_response_id',
    );
  if (present(body.conversation))
    throw invalid('conversation is not served: pass session_id to continue in the same session.', 'conversation');
  if (present(body.prompt)) throw invalid('Prompt templates are not served.', 'prompt');
  if (present(body.tools)) {
    if (!Array.isArray(body.tools)) throw invalid('tools must be an array.', 'tools');
    body.tools.forEach((tool, i) => {
      const type = (tool as { type?: unknown } | null)?.type;
      // The agent already runs with the session's container: a code interpreter tool asks for nothing more.
      if (type !== 'code_interpreter')
        throw invalid(
          `Tool type ${JSON.stringify(type ?? null)} is not served; agents run with the session's container.`,
          `tools[${i}].type`,
        );
      const container = (tool as { container?: unknown }).container;
      if (typeof container === 'string')
        throw invalid('A container is chosen by session_id, not by the tool.', `tools[${i}].container`);
    });
  }
  const format = (body.text as { format?: { type?: unknown } } | null | undefined)?.format;
  if (present(format) && format?.type !== 'text') throw invalid('Only text output is served.', 'text.format');
}

function optionalString(body: Record<string, unknown>, name: string): string | null {
  const value = body[name];
  if (!present(value)) return null;
  if (typeof value !== 'string') throw invalid(`${name} must be a string.`, name);
  return value;
}

function chooseAgent(body: Record<string, unknown>, names: readonly string[]): string | null {
  const agent = optionalString(body, 'agent');
  if (agent !== null) {
    if (!names.includes(agent))
      throw invalid(`Unknown agent ${JSON.stringify(agent)}; this server offers: ${names.join(', ')}.`, 'agent');
    return agent;
  }
  const model = body.model;
  return typeof model === 'string' && names.includes(model) ? model : null;
}

function filePart(
  part: Record<string, unknown>,
  param: string,
  limits: ResponseRequestLimits,
  defaultName: string,
): InputPart {
  if (present(part.file_url))
    throw invalid(
      'file_url is not served: send the bytes inline as file_data, or upload them and send file_id.',
      `${param}.file_url`,
    );
  const hasId = present(part.file_id);
  const hasData = present(part.file_data);
  if (hasId && hasData) throw invalid('Send either file_id or file_data, not both.', param);
  if (hasId) {
    // Malformed ids are 404 like unknown ones (no oracle); that is decided when the id is resolved.
    return { kind: 'file_id', param: `${param}.file_id`, fileId: typeof part.file_id === 'string' ? part.file_id : '' };
  }
  if (!hasData) throw invalid('An input_file needs file_id or file_data.', param);
  const filename = present(part.filename)
    ? acceptFilename(typeof part.filename === 'string' ? part.filename : '', `${param}.filename`)
    : null;
  const decoded = decodeDataUrl(part.file_data, limits.maxInlineFileBytes, `${param}.file_data`);
  const name = filename ?? `${defaultName}${extensionOf(decoded.mediaType)}`;
  return {
    kind: 'inline',
    param: `${param}.file_data`,
    filename: name,
    contentType: resolveContentType(decoded.mediaType, name),
    bytes: decoded.bytes,
  };
}

function imagePart(
  part: Record<string, unknown>,
  param: string,
  limits: ResponseRequestLimits,
  defaultName: string,
): InputPart {
  if (present(part.file_id))
    return { kind: 'file_id', param: `${param}.file_id`, fileId: typeof part.file_id === 'string' ? part.file_id : '' };
  const url = part.image_url;
  if (typeof url === 'string' && !url.startsWith('data:'))
    throw invalid('image_url must be a data: URL; images by web address are not fetched.', `${param}.image_url`);
  if (!present(url)) throw invalid('An input_image needs file_id or a data: URL in image_url.', param);
  const decoded = decodeDataUrl(url, limits.maxInlineFileBytes, `${param}.image_url`);
  const name = `${defaultName}${extensionOf(decoded.mediaType)}`;
  return {
    kind: 'inline',
    param: `${param}.image_url`,
    filename: name,
    contentType: resolveContentType(decoded.mediaType, name),
    bytes: decoded.bytes,
  };
}

function extensionOf(mediaType: string): string {
  const ext = mediaType ? extension(mediaType) : false;
  return ext ? `.${ext}` : '';
}

function contentParts(
  item: Record<string, unknown>,
  i: number,
  role: string,
  limits: ResponseRequestLimits,
): InputPart[] {
  const content = item.content;
  if (typeof content === 'string') return [{ kind: 'text', role, text: content }];
  if (!Array.isArray(content))
    throw invalid('content must be a string or an array of content parts.', `input[${i}].content`);
  return content.map((raw, j): InputPart => {
    const param = `input[${i}].content[${j}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw))
      throw invalid('A content part must be an object.', param);
    const part = raw as Record<string, unknown>;
    switch (part.type) {
      case 'input_text':
      case 'output_text':
        if (typeof part.text !== 'string') throw invalid('text must be a string.', `${param}.text`);
        return { kind: 'text', role, text: part.text };
      case 'input_file':
        return filePart(part, param, limits, `input-${i}-${j}`);
      case 'input_image':
        return imagePart(part, param, limits, `image-${i}-${j}`);
      default:
        throw invalid(
          `Content part type ${JSON.stringify(part.type ?? null)} is not served; ` +
            'use input_text, input_file or input_image.',
          `${param}.type`,
        );
    }
  });
}

function inputParts(input: unknown, limits: ResponseRequestLimits): InputPart[] {
  if (typeof input === 'string') return [{ kind: 'text', role: 'user', text: input }];
  if (!Array.isArray(input)) throw invalid('input must be a string or an array of input items.', 'input');
  const parts = input.flatMap((raw, i) => {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw))
      throw invalid('An input item must be an object.', `input[${i}]`);
    const item = raw as Record<string, unknown>;
    if (present(item.type) && item.type !== 'message')
      throw invalid(`Input item type ${JSON.stringify(item.type)} is not served; send messages.`, `input[${i}].type`);
    const role = item.role;
    if (typeof role !== 'string' || !ROLES.has(role))
      throw invalid('role must be user, system, developer or assistant.', `input[${i}].role`);
    return contentParts(item, i, role, limits);
  });
  const files = parts.filter((part) => part.kind !== 'text').length;
  if (files > limits.maxInputFiles)
    throw invalid(`A response takes at most ${limits.maxInputFiles} input files; this one has ${files}.`, 'input');
  return parts;
}

/**
 * Checks a `POST /v1/responses` body whole, before any side effect (docs/api.md §4): unserved fields,
 * the agent, every input item, and every inline file decoded. Throws the first problem as an ApiError
 * whose `param` names the field (`input[0].content[1].file_data`).
 */
export function parseResponseRequest(raw: unknown, limits: ResponseRequestLimits): ResponseRequest {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw ApiError.invalid('The JSON body must be an object.');
  const body = raw as Record<string, unknown>;
  refuseUnserved(body);
  const sessionId = optionalString(body, 'session_id');
  const agent = chooseAgent(body, limits.agentNames);
  const instructions = optionalString(body, 'instructions');
  if (!present(body.input)) throw invalid('input is required: a string, or an array of input items.', 'input');
  const parts = inputParts(body.input, limits);
  return { sessionId, agent, instructions, parts, metadata: acceptMetadata(body.metadata) };
}
