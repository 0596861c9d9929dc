import { writeFile } from 'node:fs/promises';
import type sharpModule from 'sharp';
import { ConversionError, toConversionError } from '../conversion.error';
import { previewTypeOf } from '@app/contracts';
import { assertInputSize, readCapped } from '../input-limits';
import type { Availability, ConversionInput, ConversionOutput, PdfConverter } from '../pdf-converter';
import { hasPdfHeader } from '../pdf/pdf.validator';
import type { PreviewConverterOptions } from '../preview.options';
import { pagePlacement } from './page-layout';

const DECODABLE = new Set(['png', 'jpeg', 'gif', 'webp']);

/** sharp and pdf-lib load with the first image, not at start: an idle worker does not carry them. */
const loadSharp = async (): Promise<typeof sharpModule> => (await import('sharp')).default;
const loadPdfLib = () => import('pdf-lib');

/**
 * png, jpeg, gif and webp laid on a PDF page, in process: sharp (libvips, prebuilt from npm) decodes
 * and normalises, pdf-lib writes the page. A JPEG that needs no rotation or scaling is embedded as
 * is; everything else is re-encoded (PNG when it has transparency, JPEG otherwise). Animated images
 * show their first frame.
 */
export class ImageConverter implements PdfConverter {
  readonly name = 'image';
  readonly version = '1';
  readonly maxInputBytes: number;

  constructor(private readonly options: PreviewConverterOptions) {
    this.maxInputBytes = options.image.maxInputBytes;
  }

  accepts(input: { contentType: string; filename: string }): boolean {
    return previewTypeOf(input)?.kind === 'image';
  }

  async available(): Promise<Availability> {
    const sharp = await loadSharp();
    const missing = [...DECODABLE].filter(
      (format) => !(sharp.format as unknown as Record<string, { input?: { file?: boolean } }>)[format]?.input?.file,
    );
    return missing.length ? { ok: false, reason: `sharp cannot decode ${missing.join(', ')}` } : { ok: true };
  }

  async convert(input: ConversionInput, output: ConversionOutput, signal: AbortSignal): Promise<void> {
    if (!this.accepts(input))
      throw new ConversionError('unsupported_type', `not an image: ${input.filename} (${input.contentType})`);
    try {
      await assertInputSize(input.path, this.maxInputBytes, 'images');
      const pdf = await this.render(input.path, signal);
      if (!hasPdfHeader(Buffer.from(pdf.subarray(0, 1024))))
        throw new ConversionError('invalid_output', 'pdf-lib wrote no PDF header');
      // The in-process check: the bytes parse back into a document with one page.
      const { PDFDocument } = await loadPdfLib();
      const check = await PDFDocument.load(pdf, { updateMetadata: false });
      if (check.getPageCount() !== 1)
        throw new ConversionError('invalid_output', `expected 1 page, got ${check.getPageCount()}`);
      if (signal.aborted) throw new ConversionError('aborted', 'conversion aborted');
      await writeFile(output.path, pdf);
    } catch (error) {
      throw toConversionError(error, signal);
    }
  }

  async close(): Promise<void> {}

  private async render(path: string, signal: AbortSignal): Promise<Uint8Array> {
    const { maxInputPixels, maxPlacedPixels } = this.options.image;
    const sharp = await loadSharp();
    const source = sharp(path, {
      limitInputPixels: maxInputPixels,
      failOn: 'error',
      animated: false,
      sequentialRead: true,
    });
    let metadata: sharpModule.Metadata;
    try {
      metadata = await source.metadata();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (/pixel limit/i.test(message))
        throw new ConversionError('too_large', `image is over ${maxInputPixels} pixels`, { cause: error });
      throw new ConversionError('corrupt_document', `not a readable image: ${message}`, { cause: error });
    }
    if (!metadata.format || !DECODABLE.has(metadata.format))
      throw new ConversionError(
        'corrupt_document',
        `decoded as ${metadata.format ?? 'nothing'}, not png/jpeg/gif/webp`,
      );
    if (!metadata.width || !metadata.height) throw new ConversionError('corrupt_document', 'image has no size');
    if (metadata.width * metadata.height > maxInputPixels)
      throw new ConversionError('too_large', `image is over ${maxInputPixels} pixels`);
    const rotated = (metadata.orientation ?? 1) >= 5;
    const width = rotated ? metadata.height : metadata.width;
    const height = rotated ? metadata.width : metadata.height;
    const isPlainJpeg =
      metadata.format === 'jpeg' &&
      (metadata.orientation ?? 1) === 1 &&
      metadata.space !== 'cmyk' &&
      Math.max(width, height) <= maxPlacedPixels;

    let bytes: Buffer;
    let kind: 'jpeg' | 'png';
    try {
      if (isPlainJpeg) {
        bytes = await readCapped(path, this.maxInputBytes, 'images');
        kind = 'jpeg';
      } else {
        const pipeline = sharp(path, { limitInputPixels: maxInputPixels, failOn: 'error', animated: false })
          .rotate()
          .resize({ width: maxPlacedPixels, height: maxPlacedPixels, fit: 'inside', withoutEnlargement: true })
          .toColourspace('srgb');
        kind = metadata.hasAlpha ? 'png' : 'jpeg';
        bytes =
          kind === 'png'
            ? await pipeline.png({ compressionLevel: 6 }).toBuffer()
            : await pipeline.jpeg({ quality: 90 }).toBuffer();
      }
    } catch (error) {
      if (error instanceof ConversionError) throw error;
      throw new ConversionError(
        'corrupt_document',
        `cannot decode the image: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    if (signal.aborted) throw new ConversionError('aborted', 'conversion aborted');

    const { PDFDocument } = await loadPdfLib();
    const document = await PDFDocument.create();
    document.setProducer('uhp-files previews');
    document.setCreator('uhp-files previews');
    const image = kind === 'jpeg' ? await document.embedJpg(bytes) : await document.embedPng(bytes);
    const placement = pagePlacement(image.width, image.height);
    const page = document.addPage([placement.pageWidth, placement.pageHeight]);
    page.drawImage(image, { x: placement.x, y: placement.y, width: placement.width, height: placement.height });
    return document.save();
  }
}
