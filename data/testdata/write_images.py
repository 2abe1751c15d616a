"""An independent writer of image folders (Pillow, python3-pil): one folder per
class, PNG and JPEG files, and the pixels Pillow reads back, as JSON, for tests.

    python3 write_images.py OUT_DIR
Writes OUT_DIR/{cats,dogs}/... and prints {"relative/path": [h, w, c, pixels...]}.
"""
import json
import os
import sys

from PIL import Image


def main():
    out = sys.argv[1]
    truth = {}
    for c, name in enumerate(["cats", "dogs"]):
        os.makedirs(os.path.join(out, name), exist_ok=True)
        for i in range(3):
            w, h = 5 + i, 4 + c
            rgb = Image.new("RGB", (w, h))
            rgb.putdata([((x * 40 + c * 7) % 256, (y * 50 + i) % 256, (x * y * 13) % 256)
                         for y in range(h) for x in range(w)])
            for ext, image in (("png", rgb), ("jpg", rgb), ("gray.png", rgb.convert("L"))):
                rel = os.path.join(name, f"{i}.{ext}")
                image.save(os.path.join(out, rel))
                back = Image.open(os.path.join(out, rel))
                pixels = list(back.getdata())
                channels = 1 if back.mode == "L" else 3
                flat = [v for p in pixels for v in (p if channels == 3 else (p,))]
                truth[rel] = [h, w, channels] + flat
    with open(os.path.join(out, "not-an-image.png"), "w") as f:
        f.write("nope")
    print(json.dumps(truth))


if __name__ == "__main__":
    main()
