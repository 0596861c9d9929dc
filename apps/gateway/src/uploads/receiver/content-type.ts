import { lookup } from 'mime-types';

const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;
const GENERIC = 'application/octet-stream';

/**
 * The content type of an upload (docs/api.md §2): the part's own type when it is a valid one other than
 * application/octet-stream, else the type of the extension, else application/octet-stream.
 * Parameters other than charset are dropped.
 */
export function resolveContentType(declared: string | undefined, filename: string): string {
  const [essenceRaw, ...params] = (declared ?? '').split(';');
  const essence = essenceRaw.trim().toLowerCase();
  if (MEDIA_TYPE.test(essence) && essence !== GENERIC) {
    const charset = params.map((p) => p.trim()).find((p) => /^charset=("?)[A-Za-z0-9._-]{1,40}\1$/i.test(p));
    return charset ? `${essence}; ${charset.toLowerCase().replace(/"/g, '')}` : essence;
  }
  return lookup(filename) || GENERIC;
}
