import { describe, expect, it } from 'vitest';

import { formatNumber } from '../src/dom';

describe('formatNumber', () => {
  it('prints integers whole and other numbers to 4 significant digits', () => {
    expect(formatNumber(12)).toBe('12');
    expect(formatNumber(123456789)).toBe('123456789');
    expect(formatNumber(0.1234567)).toBe('0.1235');
    expect(formatNumber(1.5e-7)).toBe('1.500e-7');
    expect(formatNumber(null)).toBe('\u2013');
  });

  it('prints a huge float that has no fraction in exponent form, not with all its digits', () => {
    // float32 statistics of an exploding training run: integers to JavaScript, 20 to 37 digits long
    expect(formatNumber(1.7261696466229317e36)).toBe('1.726e+36');
    expect(formatNumber(-15460445863609473000)).toBe('-1.546e+19');
    expect(formatNumber(101519676607255540000)).toBe('1.015e+20');
  });
});
