import { lookup } from 'mime-types';

/**
 * zlib level for text. Archives are a way to carry files, not to shrink them: level 3 keeps most of
 * the gain on text (it stays within a few percent of level 6) at about twice the speed.
 */
export const DEFLATE_LEVEL = 3;
/** A regular file, rw-r--r--: entries never carry the uploader's modes (no setuid, no executables). */
const FILE_MODE = 0o100644;

/** Types whose bytes deflate well. Everything else is stored: it is compressed already (images,
 * video, audio, zip, gzip, pdf, Office documents) or unknown binary, where deflate spends CPU for
 * nothing. */
const COMPRESSIBLE = [
  /^text\//,
  new RegExp(
    '^application/(json|xml|javascript|ecmascript|x-javascript|x-sh|x-csh|sql|rtf|x-yaml|yaml|toml|x-toml|' +
      'x-ndjson|ndjson|jsonl|x-tex|x-latex|postscript|x-tar|x-ipynb\\+json|graphql|x-httpd-php|' +
      'x-python|x-perl|x-ruby)$',
  ),
  /^application\/[\w.+-]+\+(json|xml)$/,
  /^image\/(svg\+xml|bmp|x-ms-bmp|x-portable-\w+|tiff)$/,
  /^audio\/(wav|x-wav|wave)$/,
];

/** Source and config files that mime-types does not know (or, for .ts, takes for MPEG-TS video). */
const TEXT_EXTENSIONS = new Set([
  'py',
  'ts',
  'tsx',
  'jsx',
  'mjs',
  'cjs',
  'go',
  'rs',
  'java',
  'kt',
  'scala',
  'swift',
  'c',
  'h',
  'cc',
  'cpp',
  'hpp',
  'cs',
  'rb',
  'php',
  'pl',
  'lua',
  'r',
  'sql',
  'ini',
  'cfg',
  'conf',
  'env',
  'tf',
  'log',
  'tsv',
  'proto',
  'gradle',
  'dockerfile',
]);

/** The type to judge by: the artifact's own, or from its extension when it says only "bytes". */
function effectiveType(contentType: string, filename: string): string {
  const essence = contentType.split(';')[0]!.trim().toLowerCase();
  if (essence && essence !== 'application/octet-stream') return essence;
  return (lookup(filename) || 'application/octet-stream').toLowerCase();
}

export function isCompressible(contentType: string, filename: string): boolean {
  const extension = filename.includes('.') ? filename.slice(filename.lastIndexOf('.') + 1).toLowerCase() : '';
  if (
    TEXT_EXTENSIONS.has(extension) &&
    /^(application\/octet-stream|video\/mp2t|text\/.*)?$/.test(contentType.split(';')[0]!.trim().toLowerCase())
  )
    return true;
  const type = effectiveType(contentType, filename);
  return COMPRESSIBLE.some((pattern) => pattern.test(type));
}

export interface ZipEntryOptions {
  /** 0 stores the bytes as they are. */
  compressionLevel: number;
  mtime: Date;
  mode: number;
  /** Checked against the bytes read; also tells the writer up front whether the entry needs ZIP64. */
  size: number;
}

/**
 * How one artifact goes into the ZIP. Its creation time is the entry's time, so one manifest always gives the same
 * bytes.
 */
export function zipEntryOptions(artifact: {
  filename: string;
  contentType: string;
  bytes: bigint | number;
  createdAt: Date;
}): ZipEntryOptions {
  return {
    compressionLevel: isCompressible(artifact.contentType, artifact.filename) ? DEFLATE_LEVEL : 0,
    mtime: artifact.createdAt,
    mode: FILE_MODE,
    size: Number(artifact.bytes),
  };
}
