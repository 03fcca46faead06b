#!/bin/sh
# schemas/pool.schema.json under a real JSON Schema 2020-12 validator (Ajv, strict mode), against
# the examples and the pool fixtures the C reader is tested with. Versions are pinned by
# tests/schema/package-lock.json.
set -eu
cd "${SKYPOOL_SOURCE_DIR:?}/tests/schema"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
node check.mjs
