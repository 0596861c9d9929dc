import { describe, expect, it } from 'vitest';
import { matchesMagic, OFFICE_IMPORTS } from './office-filters';
import { buildIdOf, productVersionOf, profileItems, registryModifications } from './office-profile';

describe('the LibreOffice profile', () => {
  it('records the installed version (skips the first-start self-test) and locks macros and links down', () => {
    const xml = registryModifications({ productVersion: '7.4' });
    expect(xml).toContain('<prop oor:name="ooSetupLastVersion" oor:op="fuse"><value>7.4</value>');
    const byName = Object.fromEntries(
      profileItems({ productVersion: '7.4' }).map((item) => [`${item.path}#${item.prop}`, item.value]),
    );
    expect(byName['/org.openoffice.Office.Common/Security/Scripting#MacroSecurityLevel']).toBe(3);
    expect(byName['/org.openoffice.Office.Common/Security/Scripting#DisableMacrosExecution']).toBe(true);
    expect(byName['/org.openoffice.Office.Common/Security/Scripting#BlockUntrustedRefererLinks']).toBe(true);
    expect(byName['/org.openoffice.Office.Writer/Content/Update#Link']).toBe(2);
    expect(byName['/org.openoffice.Office.Calc/Content/Update#Link']).toBe(1);
    // Never recalculate on load (0 always, 1 never, 2 ask).
    expect(byName['/org.openoffice.Office.Calc/Formula/Load#OOXMLRecalcMode']).toBe(1);
    expect(byName['/org.openoffice.Office.Calc/Formula/Load#ODFRecalcMode']).toBe(1);
    expect(xml.startsWith('<?xml')).toBe(true);
  });

  it('reads the build id a new profile records (program/setuprc)', () => {
    expect(buildIdOf('[Bootstrap]\nbuildid=40(Build:2)\nProductKey=LibreOffice 7.4\n')).toBe('40(Build:2)');
    expect(buildIdOf('[Bootstrap]\n')).toBeNull();
  });

  it('reads the major.minor version from soffice --version', () => {
    expect(productVersionOf('LibreOffice 7.4.7.2 40(Build:2)\n')).toBe('7.4');
    expect(productVersionOf('LibreOffice 24.8.1.2 abc')).toBe('24.8');
    expect(productVersionOf('command not found')).toBeNull();
  });
});

describe('office import filters', () => {
  it('every office extension has a forced import filter', () => {
    for (const entry of Object.values(OFFICE_IMPORTS)) expect(entry.filter).toBeTruthy();
  });

  it('CSV: token 13 of the filter options (evaluate formulas) is false, so =1+1 stays text', () => {
    const tokens = OFFICE_IMPORTS.csv.filterOptions!.split(',');
    expect(tokens.slice(0, 4)).toEqual(['44', '34', '76', '1']);
    expect(tokens[12]).toBe('false');
  });

  it('checks the container signature the extension implies', () => {
    expect(matchesMagic('docx', Buffer.from('PK\x03\x04rest', 'latin1'))).toBe(true);
    expect(matchesMagic('docx', Buffer.from('%PDF-1.7', 'latin1'))).toBe(false);
    expect(matchesMagic('doc', Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0]))).toBe(true);
    expect(matchesMagic('doc', Buffer.from('PK\x03\x04', 'latin1'))).toBe(false);
    expect(matchesMagic('rtf', Buffer.from('{\\rtf1\\ansi', 'latin1'))).toBe(true);
    expect(matchesMagic('csv', Buffer.from('anything'))).toBe(true);
  });
});
