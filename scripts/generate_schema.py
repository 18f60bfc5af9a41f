"""Write docs/cache-format.schema.json, the JSON Schema of the cache file format."""

from __future__ import annotations

import json
from pathlib import Path

from askcache.cachefile.format import CacheFile

TARGET = Path(__file__).resolve().parents[1] / "docs" / "cache-format.schema.json"

if __name__ == "__main__":
    TARGET.write_text(json.dumps(CacheFile.model_json_schema(), indent=2) + "\n")
    print(f"wrote {TARGET}")
