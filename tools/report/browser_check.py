#!/usr/bin/python3
"""Loads an HTML page in headless Chromium (Debian's `chromium`), takes a screenshot,
and fails on any console message (the report has no script, so any message is an
error: a script error, a resource that failed to load) or a blank render (fewer than
2% of the screenshot's pixels differ from its most common color).

Usage: browser_check.py PAGE.html SCREENSHOT.png [--width=1200 --height=1800]
Exit: 0 when the page rendered cleanly; 1 with the reason otherwise; 2 when
chromium is missing or fails to start.
"""
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def png_pixels(path):
    """(width, height, rows of RGB(A) tuples) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(path + ": not a PNG file")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    if header is None:
        raise ValueError(path + ": no IHDR chunk")
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace != 0:
        raise ValueError(path + ": unexpected PNG format (depth %d, color %d)" % (depth, color))
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous, pos = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def inked_fraction(path):
    """The share of pixels that differ from the most common color."""
    width, height, channels, rows = png_pixels(path)
    counts = {}
    for row in rows[::2]:
        for x in range(0, width * channels, channels * 2):
            key = row[x:x + 3]
            counts[key] = counts.get(key, 0) + 1
    total = sum(counts.values())
    return 1 - max(counts.values()) / total if total else 0


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    page, screenshot = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    width, height = 1200, 1800
    for arg in argv[3:]:
        m = re.fullmatch(r"--(width|height)=(\d+)", arg)
        if not m:
            print("unknown argument " + arg, file=sys.stderr)
            return 2
        if m.group(1) == "width":
            width = int(m.group(2))
        else:
            height = int(m.group(2))
    browser = shutil.which("chromium")
    if browser is None:
        print("chromium is not installed (scripts/setup.sh installs Debian's chromium)", file=sys.stderr)
        return 2
    if os.path.exists(screenshot):
        os.unlink(screenshot)  # An old one must not pass for this render.
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    try:
        proc = subprocess.run(
            [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
             "--window-size=%d,%d" % (width, height), "--screenshot=" + screenshot,
             pathlib.Path(page).as_uri()],
            capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        print("chromium did not finish rendering %s within 120 s" % page, file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0 or not os.path.exists(screenshot):
        print("chromium failed (exit %d):\n%s" % (proc.returncode, log), file=sys.stderr)
        return 2
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    if console:
        print("console messages while loading %s:\n%s" % (page, "\n".join(console)), file=sys.stderr)
        return 1
    try:
        inked = inked_fraction(screenshot)
    except (ValueError, struct.error, zlib.error) as e:
        print("the screenshot is not a PNG this check reads: %s" % e, file=sys.stderr)
        return 1
    print("%s: rendered, %.1f%% of the screenshot drawn, no console message" % (page, 100 * inked))
    if inked < 0.02:
        print("blank render: only %.2f%% of the screenshot differs from the background" % (100 * inked),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
