/**
 * The LibreOffice user profile every pool member starts from, written fresh on each (re)start. Only
 * registrymodifications.xcu is needed: LibreOffice fills in the rest itself, quickly.
 *
 * - `ooSetupLastVersion` equal to the installed version skips the first-start graphics self-test, the slowest
 *   part of a start (LibreOffice never records it in headless mode, so every fresh profile would run it again).
 * - Macros: highest security level and execution disabled (the loader also passes NEVER_EXECUTE).
 * - Links (OLE, DDE, linked sections, external images) are never updated; untrusted referer links blocked.
 * - Calc never recalculates on load (Formula/Load OOXMLRecalcMode and ODFRecalcMode, 1 = never): formulas show
 *   their cached values. Not quite all of them (LibreOffice 7.4): WEBSERVICE() and external references are
 *   evaluated anyway, with external content blocked (Err:540), and an ODS formula cell without a style is computed
 *   once to find its number format. Impress and Calc still load linked images: only the sandbox keeps those away
 *   from the network and other jobs' files.
 */
export interface ProfileSettings {
  /** `7.4` for LibreOffice 7.4.x; read from the installation. */
  productVersion: string;
}

interface Item {
  path: string;
  prop: string;
  value: string | number | boolean;
}

/** Writer: SwLinkUpdateMode NEVER = 2. Calc: ScLkUpdMode LM_NEVER = 1. Recalc mode 1 = never. */
export function profileItems(settings: ProfileSettings): Item[] {
  return [
    { path: '/org.openoffice.Setup/Product', prop: 'ooSetupLastVersion', value: settings.productVersion },
    { path: '/org.openoffice.Office.Common/Misc', prop: 'FirstRun', value: false },
    { path: '/org.openoffice.Office.Common/Security/Scripting', prop: 'MacroSecurityLevel', value: 3 },
    { path: '/org.openoffice.Office.Common/Security/Scripting', prop: 'DisableMacrosExecution', value: true },
    { path: '/org.openoffice.Office.Common/Security/Scripting', prop: 'BlockUntrustedRefererLinks', value: true },
    { path: '/org.openoffice.Office.Common/Save/Document', prop: 'LoadPrinter', value: false },
    { path: '/org.openoffice.Office.Writer/Content/Update', prop: 'Link', value: 2 },
    { path: '/org.openoffice.Office.Writer/Content/Update', prop: 'Field', value: false },
    { path: '/org.openoffice.Office.Writer/Content/Update', prop: 'Chart', value: false },
    { path: '/org.openoffice.Office.Calc/Content/Update', prop: 'Link', value: 1 },
    { path: '/org.openoffice.Office.Calc/Formula/Load', prop: 'OOXMLRecalcMode', value: 1 },
    { path: '/org.openoffice.Office.Calc/Formula/Load', prop: 'ODFRecalcMode', value: 1 },
  ];
}

const escapeXml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function registryModifications(settings: ProfileSettings): string {
  const lines = profileItems(settings).map(
    (item) =>
      `<item oor:path="${escapeXml(item.path)}"><prop oor:name="${escapeXml(item.prop)}" oor:op="fuse">` +
      `<value>${escapeXml(String(item.value))}</value></prop></item>`,
  );
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">',
    ...lines,
    '</oor:items>',
    '',
  ].join('\n');
}

/**
 * `40(Build:2)` from the installation's program/setuprc (`buildid=…`). Written to user/extensions/buildid in a new
 * profile, it spares soffice the restart (exit 81) it asks for after populating a profile: a restart that Landlock
 * would make fail, as the first start's single-instance pipe in /tmp cannot be removed by it.
 */
export function buildIdOf(setuprc: string): string | null {
  return /^buildid=(.+)$/m.exec(setuprc)?.[1]?.trim() || null;
}

/** `7.4` from `LibreOffice 7.4.7.2 40(Build:2)` (the output of `soffice --version`). */
export function productVersionOf(text: string): string | null {
  const match = /LibreOffice\s+(\d+)\.(\d+)/.exec(text);
  return match ? `${match[1]}.${match[2]}` : null;
}
