#!/bin/sh
# Trims a production node_modules (run inside the image build, from /app, after `npm ci --omit=dev`).
#
#   prune-node-modules.sh [PACKAGE ...]
#
# 1. Removes the prisma CLI and TypeScript, and every PACKAGE named, with the dependencies only they
#    needed. `npm ci --omit=dev` keeps prisma and typescript (optional peers of @prisma/client, so npm
#    counts them "devOptional"); `npm uninstall --no-save` drops them and their own dependency trees
#    (effect, c12, the engines packages, …) without touching package.json or the lockfile. It has to be
#    one npm call: a second one recomputes the tree from the lockfile and brings the first one's
#    removals back. npm keeps typescript as a peer of @prisma/client, so it is deleted by hand.
# 2. Deletes what no service loads at run time: source maps, type declarations, Markdown, and the parts
#    of @prisma/client for other databases and other engines (the generated client uses
#    runtime/client and the PostgreSQL query compiler only).
# 3. Fails when a removed package is still there.
set -eu
cd /app

npm uninstall --no-save --omit=dev --ignore-scripts --no-audit --no-fund prisma typescript "$@" >/dev/null
rm -rf node_modules/typescript node_modules/.bin/tsc node_modules/.bin/tsserver node_modules/.bin/prisma

find node_modules -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.tsbuildinfo' \
  -o \( \( -iname '*.md' -o -iname '*.markdown' \) -a ! -iname 'licen[cs]e*' \) \) -delete

# Test suites, examples and docs shipped at a package's root (bintrees' test/ is 2.3 MB).
for root in node_modules/[!@]* node_modules/@*/*; do
  [ -d "$root" ] || continue
  rm -rf "$root/test" "$root/tests" "$root/__tests__" "$root/example" "$root/examples" "$root/docs" "$root/.github"
done

# rxjs: Node takes dist/cjs for both require and import (its "node" export condition); the ES5/ES2015
# builds, the browser bundles and the TypeScript sources are never loaded.
rm -rf node_modules/rxjs/dist/esm node_modules/rxjs/dist/esm5 node_modules/rxjs/dist/bundles node_modules/rxjs/src

runtime=node_modules/@prisma/client/runtime
if [ -d "$runtime" ]; then
  for provider in mysql sqlite sqlserver cockroachdb; do rm -f "$runtime"/query_compiler_bg."$provider".*; done
  rm -f "$runtime"/query_engine_bg.* "$runtime"/library.* "$runtime"/binary.* "$runtime"/edge.* "$runtime"/edge-esm.* \
    "$runtime"/react-native.* "$runtime"/wasm-engine-edge.* "$runtime"/wasm-compiler-edge.*
  rm -rf node_modules/@prisma/client/generator-build
fi

# Scopes left empty (@img once sharp is gone).
find node_modules -mindepth 1 -maxdepth 1 -type d -name '@*' -empty -delete

for package in prisma typescript "$@"; do
  if [ -e "node_modules/$package" ]; then echo "prune-node-modules: $package is still in node_modules" >&2; exit 1; fi
done
