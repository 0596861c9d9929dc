/** A4 in points. */
export const A4 = { width: 595.28, height: 841.89 } as const;
export const PAGE_MARGIN = 36;
/** 1 CSS pixel = 0.75 pt: small images are not blown up past their 96-dpi size. */
const POINTS_PER_PIXEL = 0.75;

export interface Placement {
  pageWidth: number;
  pageHeight: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** An A4 page turned to the image's orientation, the image fitted inside the margins and centred. */
export function pagePlacement(pixelWidth: number, pixelHeight: number): Placement {
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
