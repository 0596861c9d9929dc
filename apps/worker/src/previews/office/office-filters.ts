import type { OfficeExtension } from '@app/contracts';

export interface OfficeImport {
  /** LibreOffice import filter forced for the extension: random bytes fail fast instead of being guessed at. */
  filter: string;
  /**
   * Filter options. CSV (the tokens of LibreOffice 7.4's CSV filter, in order): separator comma (44), quote " (34),
   * UTF-8 (76), from line 1, no column formats, system language (0), quoted fields not forced to text, special
   * numbers detected (the default when the token is absent), two export-only tokens (save as shown, formulas),
   * no trimming, sheet (export only), and — token 13 — evaluate formulas: false, so a cell `=1+1` or
   * `=WEBSERVICE(…)` is text, never computed.
   */
  filterOptions?: string;
  /** Leading bytes every valid file of this type starts with; checked before LibreOffice sees the file. */
  magic?: 'zip' | 'ole2' | 'rtf';
}

/** Import filter names of LibreOffice 7.4 (`soffice --infilter=` accepts the same). */
export const OFFICE_IMPORTS: Record<OfficeExtension, OfficeImport> = {
  doc: { filter: 'MS Word 97', magic: 'ole2' },
  docx: { filter: 'MS Word 2007 XML', magic: 'zip' },
  odt: { filter: 'writer8', magic: 'zip' },
  rtf: { filter: 'Rich Text Format', magic: 'rtf' },
  xls: { filter: 'MS Excel 97', magic: 'ole2' },
  xlsx: { filter: 'Calc MS Excel 2007 XML', magic: 'zip' },
  ods: { filter: 'calc8', magic: 'zip' },
  csv: { filter: 'Text - txt - csv (StarCalc)', filterOptions: '44,34,76,1,,0,false,true,true,false,false,0,false' },
  ppt: { filter: 'MS PowerPoint 97', magic: 'ole2' },
  pptx: { filter: 'Impress MS PowerPoint 2007 XML', magic: 'zip' },
  odp: { filter: 'impress8', magic: 'zip' },
};

const MAGIC: Record<NonNullable<OfficeImport['magic']>, Buffer> = {
  zip: Buffer.from([0x50, 0x4b, 0x03, 0x04]),
  ole2: Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]),
  rtf: Buffer.from('{\\rtf', 'latin1'),
};

/** False when the file cannot be of the type its extension claims (a cheap first refusal). */
export function matchesMagic(extension: OfficeExtension, head: Buffer): boolean {
  const magic = OFFICE_IMPORTS[extension].magic;
  return magic === undefined || head.subarray(0, MAGIC[magic].length).equals(MAGIC[magic]);
}
