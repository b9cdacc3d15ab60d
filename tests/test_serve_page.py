"""The page ``thread-rag serve`` serves, driven in a real browser: Debian's ``chromium`` headless through its
``chromium-driver`` and selenium (nothing downloaded). A real PDF from ../shared/data is uploaded through the page,
a question asked, the quote must be on the page before the first explanation token, a click on a quoted line shows
the page image with a highlight over the line (checked against the boxes the API returns), and a refusal renders as
one. The screenshot it takes is README's (``THREAD_RAG_SCREENSHOT=path`` keeps it there)."""
from __future__ import annotations

import os
import shutil
import time

import pytest

from conftest import DATA, needs_shared
from test_serve import ZEN_PDF, SlowModel, running
from thread_rag.serve import build_app

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
needs_chromium = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="apt-get install chromium chromium-driver")

# what the page's DOM did, in order: a quote block, the explanation's first piece, an outcome line
WATCH = """
window.seen = [];
new MutationObserver((changes) => { for (const c of changes) for (const n of c.addedNodes) {
  if (!(n instanceof HTMLElement)) continue;
  if (n.classList.contains("quote")) window.seen.push("quote");
  else if (n.classList.contains("outcome")) window.seen.push("outcome");
  else if (n.tagName === "P" && !n.className) window.seen.push("token");
}}).observe(document.getElementById("turns"), {childList: true, subtree: true});
"""


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver, script: str, timeout: float = 60):
    """The value of ``script`` (returned JavaScript) once it is truthy."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for: {script}")


def ask(driver, question: str) -> None:
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.ID, "q")
    box.clear()
    box.send_keys(question)
    driver.find_element(By.ID, "go").click()
    wait_for(driver, "return !document.getElementById('go').disabled && window.seen.length")


@needs_shared
@needs_chromium
@pytest.mark.slow
def test_the_page_asks_quotes_first_shows_the_line_on_its_pdf_page_and_refuses(make_engine, browser, tmp_path):
    from selenium.webdriver.common.by import By

    pdf = shutil.copy(DATA / ZEN_PDF, tmp_path / "zen.pdf")
    model = SlowModel(answer=lambda m: "Yes: the document says explicit is better than implicit [1]. It says so once [1].")
    model.calls = []
    app = build_app(make_engine(), allow_writes=True, chat_model=model)
    with running(app) as client:
        browser.get(str(client.base_url))
        wait_for(browser, "return document.getElementById('health').textContent")
        browser.find_element(By.ID, "file").send_keys(str(pdf))
        browser.find_element(By.CSS_SELECTOR, "#upload button").click()
        wait_for(browser, "return /indexed zen.pdf/.test(document.getElementById('upload-state').textContent)", 180)
        line = browser.execute_script("return progressLine({file: 'big.pdf', step: 'embed 120/400', share: 0.3})")
        assert line == "indexing big.pdf: embed 120/400 (30%)"  # what the page shows of /health's indexing
        wait_for(browser, "return document.querySelectorAll('#docs li').length === 1")

        browser.execute_script(WATCH)
        ask(browser, "Is explicit better than implicit?")
        seen = browser.execute_script("return window.seen")
        assert seen[0] == "quote" and "token" in seen, seen  # the manual's lines before the first explanation token
        answer = browser.execute_script("return [...document.querySelectorAll('#turns article p')].map(p => p.textContent)")
        assert any("explicit is better than implicit" in a for a in answer), answer

        line = browser.find_element(By.CSS_SELECTOR, ".qline")
        quoted = line.text
        line.click()
        wait_for(browser, "const i = document.querySelector('#viewer img'); return i && i.complete && i.naturalWidth")
        marks = wait_for(browser, """
            const sheet = document.querySelector('#viewer .sheet').getBoundingClientRect();
            return [...document.querySelectorAll('#viewer .mark')].map(m => { const r = m.getBoundingClientRect();
              return [(r.left - sheet.left) / sheet.width, (r.top - sheet.top) / sheet.height,
                      (r.right - sheet.left) / sheet.width, (r.bottom - sheet.top) / sheet.height]; });""")
        doc = browser.execute_script("return document.querySelector('#docs li span').textContent").split()[0]
        api = client.post(f"/documents/{doc}/locate", json={"lines": [quoted], "pages": "1"}).json()
        (expected,) = [b for f in api["found"] for b in f["boxes"]][:1]
        x0, y0, x1, y1 = marks[0]  # the highlight drawn over the image stands where the API says the line stands
        assert min(x1, expected["x1"]) - max(x0, expected["x0"]) > 0 and min(y1, expected["y1"]) - max(y0, expected["y0"]) > 0
        shot = os.environ.get("THREAD_RAG_SCREENSHOT") or str(tmp_path / "serve-page.png")
        assert browser.save_screenshot(shot)

        browser.execute_script("window.seen = []")
        ask(browser, "How do I install the proprietary NVIDIA graphics driver?")
        outcome = browser.execute_script("return [...document.querySelectorAll('#turns article')][0]"
                                         ".querySelector('.outcome').textContent")
        assert outcome.startswith("The documents do not say") and "token" not in browser.execute_script("return window.seen")


@needs_chromium
def test_the_page_works_on_a_server_with_a_token(manual_engine, browser):
    """A server started with a token (the way it is reached from another machine) answered the page itself with
    401, so a browser could not use it at all. The page is served without the token (it holds no data); it asks for
    the token once a request is refused, sends it with every request after, pictures included."""
    from selenium.webdriver.common.by import By

    app = build_app(manual_engine, token="s3cret", chat_model=SlowModel(answer=lambda m: "Done [1]."))
    with running(app) as client:
        assert client.get("/").status_code == 200 and client.get("/health").status_code == 401
        browser.get(str(client.base_url))
        wait_for(browser, "return !document.getElementById('login').hidden")
        assert not browser.execute_script("return document.getElementById('health').textContent")
        browser.find_element(By.ID, "token").send_keys("s3cret")
        browser.find_element(By.CSS_SELECTOR, "#login button").click()
        wait_for(browser, "return /documents/.test(document.getElementById('health').textContent)")
        assert browser.execute_script("return document.getElementById('login').hidden")
        wait_for(browser, "return document.querySelectorAll('#docs li').length > 0")
        browser.execute_script(WATCH)
        ask(browser, "How do I pre-heat summaries?")
        assert "quote" in browser.execute_script("return window.seen")  # the stream came through with the token
