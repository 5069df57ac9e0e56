"""The fleet page's scatter (`/?x=CONFIG_KEY&y=final_ema`) draws every run, in headless Chromium.

Many runs sharing the largest (or smallest) x value were drawn as one dot: uPlot draws the points between the
indexes its x scale's ends fall on, and with the scale ending exactly on a value that several points share it
stopped at the first of them. Here: 8 copies of the tiny run, 6 of them at the largest x; the points the chart
was given, the points inside the range it draws, and the API's rows must all be the same 8 runs.
"""

from __future__ import annotations

import json
import shutil
import urllib.request

import pytest
import yaml

from tests.conftest import RUNS
from tests.test_serve_browser import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, load, need_chromium, need_playwright, serving

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SAMPLES = {"r0": 4, "r1": 4, "r2": 8, "r3": 8, "r4": 8, "r5": 8, "r6": 8, "r7": 8}
KEY = "generator.n_samples_per_prompt"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory):
    need_chromium()
    need_playwright()
    folder = tmp_path_factory.mktemp("scatter-runs")
    for name, samples in SAMPLES.items():
        shutil.copytree(RUNS / "tiny", folder / name)
        config = yaml.safe_load((folder / name / "rl_config.yaml").read_text())
        config["generator"]["n_samples_per_prompt"] = samples
        (folder / name / "rl_config.yaml").write_text(yaml.safe_dump(config))
    for started in serving(folder, tmp_path_factory):
        yield started["url"]


#: per series: the points uPlot was given (non-empty y) and those inside the index range it draws (idxs of the
#: x series, which uPlot's point drawing walks), as [label, x, y] triples
DRAWN = """el => {
  const u = el.uplot, [i0, i1] = u.series[0].idxs, given = [], drawn = [];
  const labels = JSON.parse(document.querySelector(`script.chart-spec[data-for='${el.id}']`).textContent).labels;
  for (let s = 1; s < u.data.length; s++) {
    u.data[s].forEach((y, i) => {
      if (y === null || y === undefined) return;
      const point = [labels[i], u.data[0][i], y];
      given.push(point);
      const px = u.valToPos(u.data[0][i], "x"), py = u.valToPos(y, "y");
      if (i >= i0 && i <= i1 && px >= 0 && px <= u.bbox.width / devicePixelRatio
          && py >= 0 && py <= u.bbox.height / devicePixelRatio) drawn.push(point);
    });
  }
  return {given, drawn};
}"""


def test_the_scatter_draws_every_run_sharing_an_x_value(fleet) -> None:
    playwright = need_playwright()

    with urllib.request.urlopen(f"{fleet}/api/query/run_table.json?keys={KEY}") as answer:
        api = json.loads(answer.read())
    rows = api["rows"] if isinstance(api, dict) else api
    expected = sorted((r["run"], float(r[KEY]), r["final_ema"]) for r in rows if r["final_ema"] is not None)
    assert [r[0] for r in expected] == sorted(SAMPLES)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1300, "height": 900})
            tab.set_default_timeout(WAIT_MS)
            load(tab, f"{fleet}/?x={KEY}&y=final_ema")
            got = tab.eval_on_selector("#chart-fleet", DRAWN)
        finally:
            browser.close()
    assert sorted(map(tuple, got["given"])) == expected
    assert sorted(map(tuple, got["drawn"])) == expected
