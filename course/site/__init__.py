"""The course website: from a run's executed lessons, a static site that works with no network.

- :mod:`.publish`: an executed notebook made fit for a page (no widget state, panels as their static twins,
  plotly figures drawn by the site's one plotly.js) and for download (:func:`strip_widget_state`);
- :mod:`.assets`: plotly.js, KaTeX and the icon font, copied from the package's ``vendor/`` into the site;
- :mod:`.sources`: the Sphinx source folder (configuration, home page, summary, lesson pages, downloads);
- :mod:`.build`: :func:`build_site`, which runs Sphinx (sphinx-book-theme and myst-nb).

Imported by the runner only when a run builds its site (Sphinx, nbformat and plotly load then).
"""

from __future__ import annotations

from dro_course.site.assets import SiteAssetsMissing
from dro_course.site.build import SiteBuildError, build_site, lesson_page_path
from dro_course.site.publish import figure_html, publish_notebook, strip_widget_state

__all__ = [
    "SiteAssetsMissing",
    "SiteBuildError",
    "build_site",
    "figure_html",
    "lesson_page_path",
    "publish_notebook",
    "strip_widget_state",
]
