/** Types of what image-render.cjs exports for the worker and its tests (the file itself runs as a process). */
export declare const A4: { readonly width: number; readonly height: number };
export declare const PAGE_MARGIN: number;
/** The exit code of a refusal (too_large, corrupt_document), its reason as the last line of stdout. */
export declare const REFUSED: number;

export interface Placement {
  pageWidth: number;
  pageHeight: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** An A4 page turned to the image's orientation, the image fitted inside the margins and centred. */
export declare function pagePlacement(pixelWidth: number, pixelHeight: number): Placement;
