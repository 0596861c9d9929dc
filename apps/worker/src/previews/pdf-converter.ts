/** What the worker knows about the file it has streamed to disk. */
export interface ConversionInput {
  /** A file in the worker's private temp dir. */
  path: string;
  /** The name the user gave the file; only its extension is used. */
  filename: string;
  contentType: string;
}

export interface ConversionOutput {
  /** Where the PDF is written; it exists only when convert() resolves. */
  path: string;
}

export interface Availability {
  ok: boolean;
  reason?: string;
}

/**
 * One way of turning a document into a PDF. Implementations throw only ConversionError; on success the
 * output has been checked to be a PDF.
 */
export interface PdfConverter {
  /** Stable name, used in logs, metrics and the preview cache key. */
  readonly name: string;
  /** Changes when the output of the same input may change (bump to invalidate cached previews). */
  readonly version: string;
  /** The largest input it takes: checked against the source's recorded size before it is fetched (too_large). */
  readonly maxInputBytes: number;
  accepts(input: Pick<ConversionInput, 'contentType' | 'filename'>): boolean;
  convert(input: ConversionInput, output: ConversionOutput, signal: AbortSignal): Promise<void>;
  /** Whether the tools this converter needs are installed and start (for /readyz). */
  available(): Promise<Availability>;
  /** Stops warm processes; convert() after close() starts them again. */
  close(): Promise<void>;
}
