#!/bin/sh
# Rebuild plotly-course.min.js from npm's plotly.js at VERSION (the version the installed plotly.py writes figures
# for: `python -c "import plotly.offline; print(plotly.offline.get_plotlyjs_version())"`). Needs Node.js and npm's
# registry; run from anywhere: sh course/site/vendor/plotly_course/build.sh 4.1.1
set -eu
VERSION=${1:?usage: build.sh PLOTLY_JS_VERSION}
ESBUILD=0.28.2
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
npm init -y > /dev/null
# --ignore-scripts: plotly.js's install scripts build its own bundles, which are not needed here
npm install --no-audit --no-fund --ignore-scripts "plotly.js@$VERSION" "esbuild@$ESBUILD" > /dev/null
cp "$HERE/entry.js" .
BANNER="/**
* plotly.js (course: bar, box, contour, heatmap, scatter - minified) v$VERSION
* Copyright 2012-2025, Plotly, Inc.
* All rights reserved.
* Licensed under the MIT license
*/"
# the options of plotly.js's own esbuild-config.js; the map traces' stylesheet is left out (no map is drawn)
npx esbuild entry.js --bundle --minify --format=iife --global-name=Plotly --target=es2016 \
    --define:global=window --define:define.amd=false --define:process.env.NODE_DEBUG=false \
    --alias:stream=stream-browserify --loader:.css=empty --banner:js="$BANNER" --log-level=warning \
    --outfile=plotly-course.min.js
cp plotly-course.min.js "$HERE/plotly-course.min.js.part"
mv "$HERE/plotly-course.min.js.part" "$HERE/plotly-course.min.js"
cp node_modules/plotly.js/LICENSE "$HERE/LICENSE"
echo "wrote $HERE/plotly-course.min.js ($(wc -c < "$HERE/plotly-course.min.js") bytes)"
