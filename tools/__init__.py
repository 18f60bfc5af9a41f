"""Repository tooling that is not shipped with askcache (the import-linter contract types)."""
