import type { ResponseCitation } from '@app/db';
import { AgentFailure, type AgentCitation } from '../agents/agent.port';

export const MAX_CITATIONS = 1000;

/**
 * Checks an agent's citations against its text and the files of its container (`filenames`: id →
 * filename of the live files among those cited). A citation outside the text or of a file that is not
 * in the container fails the response: the agent is wrong, and a client must not be sent elsewhere.
 */
export function checkCitations(
  text: string,
  citations: AgentCitation[],
  filenames: ReadonlyMap<string, string>,
): ResponseCitation[] {
  if (citations.length > MAX_CITATIONS)
    throw new AgentFailure(
      'agent_invalid_output',
      `The agent gave ${citations.length} citations; at most ${MAX_CITATIONS} are kept.`,
    );
  return citations.map((citation, i) => {
    const { fileId, startIndex, endIndex } = citation;
    if (!(
      Number.isInteger(startIndex) &&
      Number.isInteger(endIndex) &&
      startIndex >= 0 &&
      startIndex < endIndex &&
      endIndex <= text.length
    )) {
      throw new AgentFailure(
        'agent_invalid_output',
        `citations[${i}] spans [${startIndex}, ${endIndex}), which is not inside the text (length ${text.length}).`,
      );
    }
    const filename = filenames.get(fileId);
    if (filename === undefined)
      throw new AgentFailure(
        'agent_invalid_output',
        `citations[${i}] names ${JSON.stringify(fileId)}, which is not a file of the response's container.`,
      );
    return { file_id: fileId, filename, start_index: startIndex, end_index: endIndex };
  });
}
