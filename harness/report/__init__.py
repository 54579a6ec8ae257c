"""The results page and the figures it is checked by: ``page.py`` writes ``results/index.html``
(matrix, plots, bench, audit; static, no network) from the committed tables, ``svg.py`` is its
small SVG kit and ``plots.py`` its plots, ``figures.py`` reads the figures back from the tables,
``expected.py`` holds them to ``manifests/expected.yaml``, and ``reproduction.py`` names what
``make reproduce`` runs."""
