import { describe, expect, it } from 'vitest';
import { escapeHtml, html, raw } from './html.js';

describe('html', () => {
  it('escapes every interpolated string, in content and attributes', () => {
    const payload = `<script>alert("x")</script> & 'quotes'`;
    expect(html`<p title="${payload}">${payload}</p>`.value).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;">' +
        '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;</p>',
    );
  });

  it('nests templates without escaping them twice, and escapes strings inside arrays', () => {
    const items = ['a<b', 'c&d'].map((s) => html`<li>${s}</li>`);
    expect(html`<ul>${items}</ul>`.value).toBe('<ul><li>a&lt;b</li><li>c&amp;d</li></ul>');
    expect(html`${['<i>', html`<b>ok</b>`]}`.value).toBe('&lt;i&gt;<b>ok</b>');
  });

  it('renders numbers, and nothing for null, undefined and booleans', () => {
    expect(html`${1}|${null}|${undefined}|${false}|${true}|${0}`.value).toBe('1|||||0');
  });

  it('inserts raw markup only when asked to', () => {
    expect(html`${raw('<hr>')}${'<hr>'}`.value).toBe('<hr>&lt;hr&gt;');
    expect(escapeHtml('plain')).toBe('plain');
    expect(String(html`<b>${'x'}</b>`)).toBe('<b>x</b>');
  });
});
