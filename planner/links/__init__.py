"""Share links: a view of the page parameters as URLs (SPEC §3.6).

``codecs`` writes and reads each kind of value; ``parameters`` is the table of every page
parameter and the base of the parameter sets (the sets themselves belong to what they
describe: ``planner.plan.params``, ``planner.studies.params``); ``urls`` encodes and decodes
them, and makes saved and self-contained links.
"""
