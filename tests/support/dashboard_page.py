"""What people must not see on a dashboard page, measured in a real browser: a title cut
off, time labels on top of each other, an error page's text, an empty chart that does not
say why, or an alarm cut off its widget."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

from console.dashboard.page import chart_origin, chart_size
from console.dashboard.read import Widget
from console.dashboard.svg import NO_DATA, PALETTE, legend_rows, plot_box
from tests.support.browser import RGB, Picture, dump_dom

ERROR_TEXTS = ("500", "doctype", "<html", "Traceback")
_MEASURE = """<script>
(() => {
  const problems = [];
  for (const h of document.querySelectorAll('.widget h2')) {
    if (h.scrollWidth > h.clientWidth + 1 || h.scrollHeight > h.clientHeight + 1)
      problems.push('title cut: ' + h.textContent);
  }
  for (const svg of document.querySelectorAll('svg.chart')) {
    const boxes = [...svg.querySelectorAll('text.time')].map(t => [t.textContent, t.getBBox()]);
    for (let i = 1; i < boxes.length; i++) {
      const [a, ba] = boxes[i - 1], [b, bb] = boxes[i];
      if (ba.x + ba.width > bb.x)
        problems.push('time labels overlap: ' + a + ' ' + b);
    }
  }
  for (const w of document.querySelectorAll('.widget')) {
    const title = w.querySelector('h2').textContent;
    const notes = [...w.querySelectorAll('.note')].map(n => n.textContent);
    if (w.textContent.includes(NO_DATA) && notes.length === 0)
      problems.push('no data, no reason: ' + title);
    for (const text of ERROR_TEXTS)
      if (notes.some(n => n.toLowerCase().includes(text.toLowerCase())))
        problems.push('error text ' + text + ': ' + title);
    if (w.classList.contains('log') && !w.querySelector('a[href^="https://"]'))
      problems.push('log widget without a console link: ' + title);
    const box = w.getBoundingClientRect();
    for (const badge of w.querySelectorAll('.alarm')) {
      const b = badge.getBoundingClientRect();
      if (b.bottom > box.bottom + 0.5 || b.right > box.right + 0.5)
        problems.push('alarm badge clipped: ' + badge.textContent);
    }
  }
  const out = document.createElement('pre');
  out.id = 'measured';
  out.textContent = JSON.stringify(problems);
  document.body.appendChild(out);
})();
</script>"""


def page_problems(page: Path, workdir: Path, *, width: int, height: int) -> list[str]:
    """Everything wrong with ``page`` as chromium lays it out (a copy of it measures)."""
    measured = workdir / f"measured-{page.name}"
    shutil.copyfile(page, measured)
    script = _MEASURE.replace("NO_DATA", json.dumps(NO_DATA)).replace(
        "ERROR_TEXTS", json.dumps(ERROR_TEXTS)
    )
    measured.write_text(measured.read_text().replace("</body>", script + "</body>"))
    dom = dump_dom(measured, width=width, height=height)
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.DOTALL)
    if found is None:
        raise AssertionError(f"the measuring script did not run on {page}")
    problems: list[str] = json.loads(html.unescape(found.group(1)))
    return problems


def colour(hex_colour: str) -> RGB:
    return int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16)


def plot_colours(picture: Picture, widget: Widget, series: int) -> set[RGB]:
    """The palette colours inside ``widget``'s plot area (legend excluded) as chromium drew
    the page, its chart having a legend entry for each of ``series``."""
    (x0, y0), (width, height) = chart_origin(widget), chart_size(widget)
    left, top, right, bottom = plot_box(width, height, legend_rows([None] * series, width))  # type: ignore[list-item]
    # Not the palette's grey: anti-aliased text has it too.
    palette = {colour(c) for c in PALETTE if c != "#7f7f7f"}
    return {
        picture.pixel(x, y)
        for y in range(y0 + top + 1, y0 + bottom)
        for x in range(x0 + left + 1, x0 + right)
    } & palette
