"""Take docs/serve.md's screenshots of ``gotk serve`` with Debian's headless Chromium (not a test).

The images in docs/img were taken with the package's own KGS sample (2017-01 and 2017-02, 1,258 games) encoded
with ``sevenplane``, and a small network with both heads trained on it for a few minutes on the CPU::

    gotk encode -e sevenplane -o data/kgs-sample
    gotk train --data data/kgs-sample --model resnet --blocks 2 --filters 32 --head both --epochs 50 \
        --max-minutes 4 --threads 1 --out runs/sample
    gotk serve data/kgs-sample --agent runs/sample/agent.gotk --port 8765
    python tests/serve_screenshots.py http://127.0.0.1:8765 docs/img

(``GOTK_SCREENSHOTS=docs/img pytest tests/test_serve_browser.py`` saves the test's own pages instead, with
its untrained agent.)
"""

from __future__ import annotations

import sys
import time

from playwright.sync_api import sync_playwright

# planes overlaid in the viewer's picture: the first three of these the dataset's encoder has
PLANES = ("own_liberties_1", "opponent_liberties_2", "opponent_liberties_3plus",  # sevenplane
          "liberties_1", "liberties_2", "sensibleness")  # alphago


def main(url: str, out: str) -> None:
    url = url.rstrip("/")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        pg = b.new_page(viewport={"width": 1280, "height": 860})
        pg.goto(url + "/")
        pg.click("a.dataset-link")
        pg.wait_for_selector("table.games tbody tr")
        pg.wait_for_function("[...document.querySelectorAll('img.stats-chart')].length === 6 && "
                             "[...document.querySelectorAll('img.stats-chart')].every(i => i.complete)")
        pg.screenshot(path=f"{out}/serve-stats.png")
        for _ in range(2):
            pg.click("th[data-col=num_moves]")
            time.sleep(0.5)
        pg.screenshot(path=f"{out}/serve-dataset.png")
        pg.click("table.games tbody tr:nth-child(2) a.game-link")
        pg.wait_for_selector("svg.board")
        for _ in range(6):
            pg.keyboard.press("ArrowDown")
            time.sleep(0.25)
        names = pg.eval_on_selector_all("input.plane-toggle", "els => els.map(e => e.dataset.plane)")
        wanted = [n for n in PLANES if n in names][:3]
        for n in wanted:
            pg.check(f"input.plane-toggle[data-plane={n}]")
            pg.wait_for_selector(f"label:has(input[data-plane={n}]) .swatch")
        pg.screenshot(path=f"{out}/serve-viewer.png")
        pg.click("#analyse-link")
        pg.wait_for_selector(".agent-card[data-agent=a0] rect.heat")
        time.sleep(0.3)
        pg.screenshot(path=f"{out}/serve-analyse.png", full_page=True)
        pg.set_viewport_size({"width": 1400, "height": 1000})
        pg.fill("#visits", "200")
        pg.click("#search")
        pg.wait_for_selector(".agent-card[data-agent=a0] table.search-moves tbody tr", timeout=300_000)
        time.sleep(0.3)
        pg.screenshot(path=f"{out}/serve-search.png")  # what a 1400x1000 window shows, without scrolling
        pg.set_viewport_size({"width": 1280, "height": 860})
        pg.goto(url + "/#/play")
        pg.wait_for_selector("#newgame")
        pg.select_option("#agent", "a0")
        pg.click("#start")
        pg.wait_for_selector("svg.board rect.target")
        for v in ("Q16", "D4", "Q3", "C16", "R10"):
            n = pg.get_attribute("#board", "data-moves") or "0"
            pg.click(f"#board rect.target[data-point={v}]")
            pg.wait_for_function(f"document.querySelector('#board').dataset.moves !== '{n}'")
        pg.screenshot(path=f"{out}/serve-play.png")
        b.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
