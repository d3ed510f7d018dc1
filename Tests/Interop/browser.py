"""Headless Chromium for the tests that look at pages and pictures (selenium + chromium-driver), and
waiting for a condition with a deadline. Not a test module: the tests import it."""
import shutil
import time

from tool_process import TIMEOUT


def chromium(*extra_arguments, logs=False):
    """A headless Chromium driver at 1280 × 900 (device scale 1), with `extra_arguments` after the
    defaults; with `logs`, the browser console is kept (driver.get_log("browser"))."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                "--force-device-scale-factor=1", "--no-first-run", "--disable-extensions", *extra_arguments]:
        options.add_argument(arg)
    if logs:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(TIMEOUT)
    return driver


def wait_until(predicate, timeout=TIMEOUT, what="condition"):
    """The first true value of `predicate()`, tried every 0.1 s for `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")
