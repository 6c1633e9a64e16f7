"""A page rendered in a real browser (Debian's headless Chromium), as the
fleet's and the report's tests read them: a probe script, set before the
page's </body>, writes what it found into the body's data attributes
(`data-loaded`, `data-errors`, `data-images`, ...), and the DOM Chromium
dumps is read back."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# What every probe records: script and image errors, each image's state, and
# that the load event came. `extra` adds lines of its own to that handler.
PROBE = """<script>
document.body.dataset.errors = "";
addEventListener("error", e => { document.body.dataset.errors += (e.target.tagName || "script") + " "; }, true);
addEventListener("load", () => {
  document.body.dataset.images = [...document.images].map(i => i.complete && i.naturalWidth > 0 ? "ok" : "broken").join(",");
%s
  document.body.dataset.loaded = "yes";
});
</script></body>"""


def dom(html: str, folder: Path, extra: str = "") -> str:
    """The page's DOM after Chromium loaded it with the probe (and extra)."""
    probed = folder / "probed.html"
    probed.write_text(html.replace("</body>", PROBE % extra))
    run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                          f"--user-data-dir={folder / 'profile'}", "--dump-dom", probed.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def rendered(html: str, folder: Path, extra: str = "") -> dict[str, str]:
    """The page rendered with the probe (and extra), its body's data attributes by name."""
    page = dom(html, folder, extra)
    body = re.search(r"<body[^>]*>", page)
    assert body, page[:2000]
    return dict(re.findall(r'data-([a-z]+)="([^"]*)"', body.group(0)))
