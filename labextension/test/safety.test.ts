import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { h, sanitizeSvg } from '../src/dom';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap(f => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('safety', () => {
  it('no source file parses strings as HTML or code', () => {
    const bad = /\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|createContextualFragment|eval\s*\(|new Function\s*\()/;
    const code = (p: string) => readFileSync(p, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    const offenders = sources(join(__dirname, '..', 'src')).filter(p => bad.test(code(p)));
    expect(offenders).toEqual([]);
  });

  it('sanitizeSvg drops scripts, handlers, links and styles', () => {
    const svg = new DOMParser().parseFromString(
      `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" onload="alert(1)">
        <script>alert(2)</script>
        <g id="a" class="node" onclick="alert(3)" style="fill:url(javascript:alert(4))">
          <a xlink:href="javascript:alert(5)" href="https://example.com"><text>label</text></a>
          <foreignObject><div xmlns="http://www.w3.org/1999/xhtml">x</div></foreignObject>
          <image href="x.png"/>
          <set attributeName="onmouseover" to="alert(6)"/>
        </g>
      </svg>`,
      'image/svg+xml'
    ).documentElement;
    sanitizeSvg(svg);
    const out = new XMLSerializer().serializeToString(svg);
    expect(out).not.toMatch(/script|onload|onclick|javascript|href|foreignObject|image|<set|<a[\s>]|style=/i);
    expect(svg.querySelector('text')!.textContent).toBe('label');
    expect(svg.querySelector('g')!.getAttribute('class')).toBe('node');
  });

  it('h() never sets handler or link attributes and puts text in as text', () => {
    const el = h('div', { text: '<b>x</b>', attrs: { onclick: 'alert(1)', href: 'javascript:x', 'data-x': '1' } });
    expect(el.children.length).toBe(0);
    expect(el.textContent).toBe('<b>x</b>');
    expect(el.getAttribute('onclick')).toBeNull();
    expect(el.getAttribute('href')).toBeNull();
    expect(el.getAttribute('data-x')).toBe('1');
  });
});
