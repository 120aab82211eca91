// The plotly.js the course's website serves: its core (which draws scatter traces) and the four other trace types
// the course's figures make. tests/course/test_site_assets.py checks that this list covers every trace the course
// draws; build.sh turns this file into plotly-course.min.js.
var Plotly = require('plotly.js/lib/core');

Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/box'),
    require('plotly.js/lib/contour'),
    require('plotly.js/lib/heatmap'),
]);

module.exports = Plotly;
