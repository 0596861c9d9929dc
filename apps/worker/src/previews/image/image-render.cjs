'use strict';
/**
 * The image converter's process: started by the worker through the sandbox (one confined process per image), it
 * decodes an untrusted png, jpeg, gif or webp with sharp (libvips) and lays it on one PDF page with pdf-lib. The
 * worker itself never loads either: a hostile image meets libvips only here, and an idle worker does not carry
 * libvips or pdf-lib in its memory.
 *
 *   node image-render.cjs probe
 *     prints {"missing":[...]}: the formats this sharp cannot decode from a file.
 *   node image-render.cjs render <input> <output.pdf> <maxInputPixels> <maxPlacedPixels>
 *     exit 0: <output.pdf> holds one page. A refusal prints {"failure":"too_large"|"corrupt_document","message"}
 *     as its last stdout line and exits 2; anything else (a crash, a limit) is the worker's process_crashed.
 *
 * Plain CommonJS, not TypeScript: the same file runs from the source tree (tests) and from dist/ (a Nest asset).
 */
const { readFileSync, writeFileSync } = require('node:fs');

const DECODABLE = ['png', 'jpeg', 'gif', 'webp'];
/** A4 in points. */
const A4 = { width: 595.28, height: 841.89 };
const PAGE_MARGIN = 36;
/** 1 CSS pixel = 0.75 pt: small images are not blown up past their 96-dpi size. */
const POINTS_PER_PIXEL = 0.75;
/** The refusals the worker maps to permanent failures; other errors are crashes. */
const REFUSED = 2;

class Refusal extends Error {
  constructor(failure, message) {
    super(message);
    this.failure = failure;
  }
}

/** An A4 page turned to the image's orientation, the image fitted inside the margins and centred. */
function pagePlacement(pixelWidth, pixelHeight) {
  const landscape = pixelWidth > pixelHeight;
  const pageWidth = landscape ? A4.height : A4.width;
  const pageHeight = landscape ? A4.width : A4.height;
  const scale = Math.min(
    (pageWidth - 2 * PAGE_MARGIN) / pixelWidth,
    (pageHeight - 2 * PAGE_MARGIN) / pixelHeight,
    POINTS_PER_PIXEL,
  );
  const width = pixelWidth * scale;
  const height = pixelHeight * scale;
  return { pageWidth, pageHeight, x: (pageWidth - width) / 2, y: (pageHeight - height) / 2, width, height };
}

function loadSharp() {
  const sharp = require('sharp');
  // One image per process: no cache to keep, and one libvips thread keeps a decode's memory predictable.
  sharp.cache(false);
  sharp.concurrency(1);
  return sharp;
}

function probe() {
  const sharp = loadSharp();
  const missing = DECODABLE.filter((format) => !sharp.format[format]?.input?.file);
  process.stdout.write(`${JSON.stringify({ missing })}\n`);
}

/**
 * A JPEG that needs no rotation, scaling or colour conversion is embedded as is; everything else is re-encoded
 * (PNG when it has transparency, JPEG otherwise). Animated images show their first frame.
 */
async function render(input, output, maxInputPixels, maxPlacedPixels) {
  const sharp = loadSharp();
  const options = { limitInputPixels: maxInputPixels, failOn: 'error', animated: false };
  let metadata;
  try {
    metadata = await sharp(input, { ...options, sequentialRead: true }).metadata();
  } catch (error) {
    if (/pixel limit/i.test(error.message)) throw new Refusal('too_large', `image is over ${maxInputPixels} pixels`);
    throw new Refusal('corrupt_document', `not a readable image: ${error.message}`);
  }
  if (!metadata.format || !DECODABLE.includes(metadata.format))
    throw new Refusal('corrupt_document', `decoded as ${metadata.format ?? 'nothing'}, not png/jpeg/gif/webp`);
  if (!metadata.width || !metadata.height) throw new Refusal('corrupt_document', 'image has no size');
  if (metadata.width * metadata.height > maxInputPixels)
    throw new Refusal('too_large', `image is over ${maxInputPixels} pixels`);
  const orientation = metadata.orientation ?? 1;
  const longestSide = Math.max(metadata.width, metadata.height);
  const isPlainJpeg =
    metadata.format === 'jpeg' && orientation === 1 && metadata.space !== 'cmyk' && longestSide <= maxPlacedPixels;

  let bytes;
  let kind;
  try {
    if (isPlainJpeg) {
      // A copy with its own memory: a small file's Buffer is a slice of Node's pool, and pdf-lib reads the
      // underlying ArrayBuffer from offset 0.
      bytes = new Uint8Array(readFileSync(input));
      kind = 'jpeg';
    } else {
      const pipeline = sharp(input, options)
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
    throw new Refusal('corrupt_document', `cannot decode the image: ${error.message}`);
  }

  const { PDFDocument } = require('pdf-lib');
  const document = await PDFDocument.create();
  document.setProducer('uhp-files previews');
  document.setCreator('uhp-files previews');
  const image = kind === 'jpeg' ? await document.embedJpg(bytes) : await document.embedPng(bytes);
  const placement = pagePlacement(image.width, image.height);
  const page = document.addPage([placement.pageWidth, placement.pageHeight]);
  page.drawImage(image, { x: placement.x, y: placement.y, width: placement.width, height: placement.height });
  const pdf = await document.save();
  // The bytes parse back into a document with one page before they are written.
  const check = await PDFDocument.load(pdf, { updateMetadata: false });
  if (check.getPageCount() !== 1) throw new Error(`pdf-lib wrote ${check.getPageCount()} pages, not 1`);
  writeFileSync(output, pdf, { flag: 'wx', mode: 0o600 });
}

async function main(argv) {
  const [command, ...args] = argv;
  if (command === 'probe') return probe();
  if (command === 'render' && args.length === 4) {
    const [input, output, maxInputPixels, maxPlacedPixels] = args;
    return render(input, output, Number(maxInputPixels), Number(maxPlacedPixels));
  }
  throw new Error('usage: image-render.cjs probe | render <input> <output.pdf> <maxInputPixels> <maxPlacedPixels>');
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((error) => {
    if (error instanceof Refusal) {
      process.stdout.write(`${JSON.stringify({ failure: error.failure, message: error.message })}\n`);
      process.exitCode = REFUSED;
    } else {
      process.stderr.write(`${error?.stack ?? error}\n`);
      process.exitCode = 1;
    }
  });
}

module.exports = { A4, PAGE_MARGIN, REFUSED, pagePlacement };
