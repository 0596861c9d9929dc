import { Inject, Injectable } from '@nestjs/common';
import type { ComposeSource } from '@app/contracts';
import { ObjectStager } from '@app/lifecycle';
import { type CompletedObject, type CompletionRequest, md5Mismatch, sourcesOf } from './completed-object';

/**
 * Any other order: the named byte ranges composed into a new object on the storage side (their bytes never
 * come here), hashed on the way, so the file is "processed" at once. It always applies.
 */
@Injectable()
export class ComposedCompletion {
  constructor(@Inject(ObjectStager) private readonly stager: ObjectStager) {}

  async complete({ principalId, upload, parts, md5 }: CompletionRequest): Promise<CompletedObject> {
    const sources: ComposeSource[] = sourcesOf(parts);
    const object = await this.stager.stageComposed(principalId, sources, upload.mimeType);
    if (md5 !== null && object.md5 !== md5) {
      await this.stager.discard([object]);
      throw md5Mismatch(object.md5);
    }
    return { object, how: 'composed', kept: 'staged' };
  }
}
