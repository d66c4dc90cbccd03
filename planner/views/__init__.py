"""What a person looks at, composed once for every front end.

For each thing a user looks at, one function here returns its *view*: the sentences,
the tables as a header and rows of formatted cells, the figures (a label and a value),
the links and the command line that reproduces it. The Plan page, the report (HTML and
Markdown) and the ``planner`` command only render a view — widgets, markup, padded text
— escaping each cell as their format needs, so the same plan reads the same on all three.

The views sit on their own layer of the import contracts in ``pyproject.toml``: above
the plan, the studies and validation (which compute) and below the report and the command
line (which render). They import nothing of ``planner.cli``, ``dashboard`` or the
report's renderers, and the front ends reach the simulator's names through them.

- ``table``: the plain pieces a view is made of (``Table``, ``Metric``, ``Link``).
- ``plan``: a plan's view (``plan_view``): the answer, the figures at the cap, the cost
  sentence, the options, MIG-profiles and stage tables, the run behind the headline, the
  links and the command.
- ``simulation``: a simulation's view (``simulation_view``): its headline figures, the
  notes of a run far past the card's capacity and the summary ``planner simulate``
  prints; and ``simulation_scenario``, the one way its parameters become a ``Scenario``.
- ``curve``: a curve's view (``curve_view``, with ``fit_view`` for a fit to points):
  its metadata and points as tables, the fit's description, leave-one-out sentence,
  table and bars, the batch to measure next, the assumptions and the series a chart
  draws, as the Curves page, ``planner curves show`` and ``planner fit`` show them.
- ``study``: a stored study's view (``study_view``) over two of its axes: its summary,
  the grid of one figure with each cell's text, the cheapest cost at each latency budget,
  the cells table and every cell's Plan link, as the Studies page and ``planner study``
  show them.
- ``loadtest``: a load test's view (``loadtest_view``): its title and facts, the error
  tables (measured against predicted, and against the calibrated prediction), the
  accuracy over the loaded runs, the seat caps, the calibration, a server's own counts,
  the chart series and the ``--json`` document (``summary``), as the Validate page and
  ``planner loadtest`` (its runs, ``show`` and ``import``) show them.
- ``cards``: a card comparison's view (``card_comparison_view``): each curve's cells,
  as the Compare page's table and as ``planner compare-cards``' table.
- ``choices``: what a front end offers to choose (policies, phases, sharing modes and
  the ``Sharing`` a choice makes, MIG profiles, the worker's stages).
- ``runs`` and ``work``: the simulator's runs and results and its budget of work, as the
  front ends read them.
"""
