import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';

const run = promisify(execFile);

/**
 * Test documents made at setup time, never committed: hand-written minimal OOXML/ODF zips for the
 * crafted (hardening) cases, and LibreOffice's own output for the ordinary formats it writes.
 */

/**
 * A store-only zip (no compression), enough for OOXML and ODF readers. Entry order is kept (ODF wants `mimetype`
 * first).
 */
export function zip(entries: Array<[name: string, content: string | Buffer]>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of entries) {
    const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
    const fileName = Buffer.from(name, 'utf8');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(0, 8); // stored
    local.writeUInt32LE(0, 10); // time/date
    local.writeUInt32LE(crc >>> 0, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(fileName.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(0, 10);
    central.writeUInt32LE(0, 12);
    central.writeUInt32LE(crc >>> 0, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(fileName.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, fileName, data);
    centrals.push(central, fileName);
    offset += local.length + fileName.length + data.length;
  }
  const centralSize = centrals.reduce((sum, part) => sum + part.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
const R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

/** A .docx whose body is the given WordprocessingML paragraphs, with optional extra relationships. */
export function docx(
  bodyXml: string,
  relationships: Array<{ id: string; type: string; target: string; external?: boolean }> = [],
): Buffer {
  const rels = relationships
    .map(
      (rel) =>
        `<Relationship Id="${rel.id}" Type="${rel.type}" Target="${rel.target}"${rel.external ? ' TargetMode="External"' : ''}/>`,
    )
    .join('');
  return zip([
    [
      '[Content_Types].xml',
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
    ],
    [
      '_rels/.rels',
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="${R}/officeDocument" Target="word/document.xml"/></Relationships>`,
    ],
    [
      'word/_rels/document.xml.rels',
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rels}</Relationships>`,
    ],
    [
      'word/document.xml',
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="${W}" xmlns:r="${R}" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><w:body>${bodyXml}</w:body></w:document>`,
    ],
  ]);
}

export const paragraph = (text: string) => `<w:p><w:r><w:t xml:space="preserve">${text}</w:t></w:r></w:p>`;

/** A .odt whose office:text is the given ODF body. */
export function odt(bodyXml: string): Buffer {
  return zip([
    ['mimetype', 'application/vnd.oasis.opendocument.text'],
    [
      'META-INF/manifest.xml',
      `<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>`,
    ],
    [
      'content.xml',
      `<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:script="urn:oasis:names:tc:opendocument:xmlns:script:1.0" office:version="1.2"><office:body><office:text>${bodyXml}</office:text></office:body></office:document-content>`,
    ],
  ]);
}

const S = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';

/**
 * A one-sheet .xlsx whose first row holds the given cells, written as SpreadsheetML `<c>` elements (e.g. a formula
 * with a cached value: `<c r="B1"><f>6*7</f><v>1234567</v></c>`).
 */
export function xlsx(cellsXml: string): Buffer {
  return zip([
    [
      '[Content_Types].xml',
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`,
    ],
    [
      '_rels/.rels',
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="${R}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
    ],
    [
      'xl/workbook.xml',
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="${S}" xmlns:r="${R}"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`,
    ],
    [
      'xl/_rels/workbook.xml.rels',
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="${R}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`,
    ],
    [
      'xl/worksheets/sheet1.xml',
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="${S}"><sheetData><row r="1">${cellsXml}</row></sheetData></worksheet>`,
    ],
  ]);
}

/** A one-sheet .ods whose first row holds the given `<table:table-cell>` elements. */
export function ods(cellsXml: string): Buffer {
  const mime = 'application/vnd.oasis.opendocument.spreadsheet';
  return zip([
    ['mimetype', mime],
    [
      'META-INF/manifest.xml',
      `<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type="${mime}"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>`,
    ],
    [
      'content.xml',
      `<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:of="urn:oasis:names:tc:opendocument:xmlns:of:1.2" office:version="1.2"><office:body><office:spreadsheet><table:table table:name="Sheet1"><table:table-row>${cellsXml}</table:table-row></table:table></office:spreadsheet></office:body></office:document-content>`,
    ],
  ]);
}

/** A .odp with one slide holding `text` and the given ODF drawing elements (frames). */
export function odp(text: string, shapesXml = ''): Buffer {
  const mime = 'application/vnd.oasis.opendocument.presentation';
  return zip([
    ['mimetype', mime],
    [
      'META-INF/manifest.xml',
      `<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type="${mime}"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>`,
    ],
    [
      'content.xml',
      `<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" office:version="1.2"><office:body><office:presentation><draw:page draw:name="one"><draw:frame svg:x="1cm" svg:y="1cm" svg:width="20cm" svg:height="2cm"><draw:text-box><text:p>${text}</text:p></draw:text-box></draw:frame>${shapesXml}</draw:page></office:presentation></office:body></office:document-content>`,
    ],
  ]);
}

/**
 * A presentation whose images are links. Impress loads linked images (file:// or http) when it opens the
 * document, whatever the Writer link settings say: only the sandbox keeps it from other files and the network.
 */
export function odpLinkingImages(text: string, hrefs: string[]): Buffer {
  const frames = hrefs
    .map(
      (href, i) =>
        `<draw:frame draw:name="linked${i}" svg:x="1cm" svg:y="${4 + 2.5 * i}cm" svg:width="12cm" svg:height="2cm"><draw:image xlink:type="simple" xlink:href="${href}"/></draw:frame>`,
    )
    .join('');
  return odp(text, frames);
}

/** The office formats LibreOffice writes from an HTML (text), CSV (spreadsheet) or HTML (presentation) source. */
const TARGETS = {
  doc: { from: 'html', filter: 'doc:MS Word 97' },
  docx: { from: 'html', filter: 'docx:MS Word 2007 XML' },
  odt: { from: 'html', filter: 'odt:writer8' },
  rtf: { from: 'html', filter: 'rtf:Rich Text Format' },
  xls: { from: 'csv', filter: 'xls:MS Excel 97' },
  xlsx: { from: 'csv', filter: 'xlsx:Calc MS Excel 2007 XML' },
  ods: { from: 'csv', filter: 'ods:calc8' },
  ppt: { from: 'odp', filter: 'ppt:MS PowerPoint 97' },
  pptx: { from: 'odp', filter: 'pptx:Impress MS PowerPoint 2007 XML' },
  odp: { from: 'odp', filter: 'odp:impress8' },
} as const;
export type GeneratedOfficeFormat = keyof typeof TARGETS;

/** A flat ODF presentation (.fodp) with one slide holding `text`. */
function flatPresentation(text: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:body><office:presentation><draw:page draw:name="one"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm"><draw:text-box><text:p>${text}</text:p></draw:text-box></draw:frame></draw:page></office:presentation></office:body></office:document>`;
}

/**
 * Writes `<dir>/sample.<format>` for every generated format, each containing `marker`, with one cold
 * soffice run per source kind (a few seconds in all). A profile with `ooSetupLastVersion` set skips the
 * first-start self-test.
 */
export async function makeOfficeSamples(dir: string, marker: string): Promise<Record<GeneratedOfficeFormat, string>> {
  const sources = join(dir, 'sources');
  const profile = join(dir, 'fixture-profile');
  await mkdir(join(profile, 'user'), { recursive: true });
  await mkdir(sources, { recursive: true });
  await writeFile(
    join(profile, 'user', 'registrymodifications.xcu'),
    `<?xml version="1.0" encoding="UTF-8"?><oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><item oor:path="/org.openoffice.Setup/Product"><prop oor:name="ooSetupLastVersion" oor:op="fuse"><value>7.4</value></prop></item></oor:items>`,
  );
  await writeFile(
    join(sources, 'sample.html'),
    `<!DOCTYPE html><html><body><h1>Sample</h1><p>${marker} in a text document.</p></body></html>`,
  );
  await writeFile(join(sources, 'sample.csv'), `name,value\n${marker},42\nsecond row,7\n`);
  await writeFile(join(sources, 'sample.fodp'), flatPresentation(`${marker} on a slide`));
  const result = {} as Record<GeneratedOfficeFormat, string>;
  for (const [format, target] of Object.entries(TARGETS) as Array<
    [GeneratedOfficeFormat, (typeof TARGETS)[GeneratedOfficeFormat]]
  >) {
    const outDir = join(dir, `out-${format}`);
    const source = join(sources, target.from === 'odp' ? 'sample.fodp' : `sample.${target.from}`);
    await run(
      'soffice',
      [
        '--headless',
        '--norestore',
        `-env:UserInstallation=file://${profile}`,
        '--convert-to',
        target.filter,
        '--outdir',
        outDir,
        source,
      ],
      {
        env: { PATH: '/usr/bin:/bin', HOME: profile, LANG: 'C.UTF-8' },
        timeout: 60_000,
      },
    );
    result[format] = join(outDir, `sample.${format}`);
    await readFile(result[format]); // throws when LibreOffice wrote nothing
  }
  return result;
}

/** The text of a PDF as pdftotext extracts it. */
export async function pdfText(path: string): Promise<string> {
  const { stdout } = await run('pdftotext', ['-layout', path, '-'], { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** `qpdf --check` exit code (0 clean, 3 warnings, 2 errors). */
export async function qpdfCheck(path: string): Promise<number> {
  try {
    await run('qpdf', ['--check', path]);
    return 0;
  } catch (error) {
    return (error as { code?: number }).code ?? -1;
  }
}
