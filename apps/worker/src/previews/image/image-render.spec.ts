import { describe, expect, it } from 'vitest';
import { A4, PAGE_MARGIN, pagePlacement } from './image-render.cjs';

describe('pagePlacement', () => {
  it('a large portrait image fills the A4 page inside the margins, centred', () => {
    const p = pagePlacement(3000, 6000);
    expect([p.pageWidth, p.pageHeight]).toEqual([A4.width, A4.height]);
    expect(p.height).toBeCloseTo(A4.height - 2 * PAGE_MARGIN);
    expect(p.x).toBeCloseTo((A4.width - p.width) / 2);
  });

  it('a wide image gets a landscape page', () => {
    const p = pagePlacement(4000, 1000);
    expect([p.pageWidth, p.pageHeight]).toEqual([A4.height, A4.width]);
    expect(p.width).toBeCloseTo(A4.height - 2 * PAGE_MARGIN);
  });

  it('a small image is not enlarged past 96 dpi', () => {
    const p = pagePlacement(100, 50);
    expect(p.width).toBeCloseTo(75);
    expect(p.height).toBeCloseTo(37.5);
  });
});
